// What other features may use of clinical (docs/architecture.md): everything else in this folder is its own.
export { isLoincCode, sensitivityCodes } from './codes.js';
export { readObservations, type NormalizedObservation } from './ingest/observations.js';
export { readRecord } from './ingest/records.js';
export type { IngestService } from './ingest/ingest-service.js';
export { RECORD_TYPES, COMPARTMENT_TYPES, REFERENCED_TYPES, PATIENT_ELEMENT, isRecordType } from './record-types.js';
export { plainCategories, plainCount, plainTypeName } from './plain-words.js';
export {
  AttachmentStore,
  attachmentsOf,
  binaryIdOf,
  storableContentType,
  type Attachment,
} from './attachments/store.js';
