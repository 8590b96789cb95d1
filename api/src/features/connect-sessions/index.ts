// What other features may use of connect sessions (docs/architecture.md): everything else in this folder is its own.
export { digest } from './service.js';
export type { ConnectSession, SealedValue, SessionStore } from './store.js';
export type { ServedBrands, SessionConnections, SignIns } from './ports.js';
export { createConnectSessions, createSessionStore } from './create.js';
