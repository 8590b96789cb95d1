// What other features may use of connect sessions (docs/architecture.md): everything else in this folder is its own.
export { digest } from './service.js';
export type { ConnectSession, SessionStore } from './store.js';
