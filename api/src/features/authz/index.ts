// What other features may use of authz (docs/architecture.md): everything else in this folder is its own.
export type { AuthorizationService } from './check.js';
