// What other features may use of app-users (docs/architecture.md): everything else in this folder is its own.
export type { AppUser, AppUserStore, Connection, ConnectionRecord } from './store.js';
export type { AppUserService } from './service.js';
export { AppUserId } from './schema.js';
