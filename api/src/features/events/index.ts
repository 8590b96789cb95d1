// What other features may use of events (docs/architecture.md, "Outbox"): the shape of an event, the outbox a
// change records its events in, and, for the webhook dispatcher that delivers them, the queue, recovery and wake-ups.
// Everything else in this folder is its own.
export {
  EVENT_TYPES,
  TEST_EVENT_TYPE,
  type ChangeTarget,
  type DeliverableType,
  type DomainEvent,
  type EventType,
} from './domain-event.js';
export type { EventOutbox } from './outbox.js';
export type { StoredEvent } from './outbox-collection.js';
export type { EventQueue } from './event-queue.js';
export type { OutboxRecovery } from './outbox-recovery.js';
export type { KnownEvents, WorkSignals } from './signals.js';
export { createEvents, type Events } from './create.js';
