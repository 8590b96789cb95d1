// In-memory EventOutbox for unit tests: keeps the events whose change committed, in order, and drops the
// others, as the durable outbox does.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../../core/src/clock.js';
import type { DomainEvent, EventOutbox, EventType } from './outbox.js';

export class FakeOutbox implements EventOutbox {
  /** Events whose change committed, oldest first. */
  readonly committed: DomainEvent[] = [];

  constructor(private readonly clock: Clock) {}

  event(type: EventType, customerAccountId: string, subject: string, data: Record<string, unknown>): DomainEvent {
    return { id: randomUUID(), type, customerAccountId, subject, data, occurredAt: this.clock.now() };
  }

  async record<T>(events: DomainEvent[], change: () => Promise<T | undefined>): Promise<T | undefined> {
    const result = await change();
    if (result !== undefined) this.committed.push(...events);
    return result;
  }
}
