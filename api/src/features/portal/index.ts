// What the composition root uses of the patient's page (docs/architecture.md).
export { createPortal } from './create.js';
export type { PortalService } from './service.js';
