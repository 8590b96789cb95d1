// What other features may use of apps (docs/architecture.md): everything else in this folder is its own.
export type { App, AppStore } from './store.js';
