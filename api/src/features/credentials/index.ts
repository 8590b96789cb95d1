// What other features may use of credentials (docs/architecture.md): everything else in this folder is its own.
export type { ApiKeyStore } from './store.js';
