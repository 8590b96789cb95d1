// What other features may use of app-users (docs/architecture.md): everything else in this folder is its own.
export type { AppUser, AppUserStore, Connection, ConnectionRecord, ConnectionStatus, HealthLink } from './store.js';
export type { AppUserService, ConnectionLifecycle } from './service.js';
export { tombstoned, UserTransitions, type Decision } from './transitions.js';
export { presentSync } from './presenter.js';
export { AppUserId, AppUserParams, ConnectionParams, SyncView } from './schema.js';
export { createAppUserDocuments, createAppUsers, type AppUserDocuments } from './create.js';
