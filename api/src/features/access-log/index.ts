// What other features may use of the access log (docs/architecture.md).
export { createAccessLog } from './create.js';
export type { AccessLogService } from './service.js';
export type { AccessEntry } from './store.js';
export { presentAuditEvent, type AuditNames } from './audit-event.js';
