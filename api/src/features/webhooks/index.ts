// What other features may use of webhooks (docs/architecture.md): everything else in this folder is its own.
export type { ChangeTarget, DomainEvent } from './events/domain-event.js';
export type { EventOutbox } from './events/outbox.js';
