// In-memory EventOutbox for unit tests: keeps the events whose change committed, in order, and drops the
// others, as the durable outbox does; remembers the change each was recorded with. Where the durable outbox
// cannot trust a change's answer (a change that threw, or answered "nothing to do" after a write retried on
// its own first attempt, asks the database whether it landed), this one can: a fake store's change that throws
// or answers nothing did nothing. So it keeps no staged events and needs no recovery.
// test/api/features/events/event-outbox.test.ts holds it and Outbox to what they share (docs/architecture.md,
// "Stores and fakes").
import { randomUUID } from 'node:crypto';
import type { Clock } from '#core/clock.js';
import type { ChangeTarget, DeliverableType, DomainEvent } from './domain-event.js';
import type { EventOutbox } from './outbox.js';

export class FakeOutbox implements EventOutbox {
  /** Events whose change committed (or that were appended), oldest first. */
  readonly committed: DomainEvent[] = [];
  /** The target each committed change named, by event id. */
  readonly targets = new Map<string, ChangeTarget>();

  constructor(private readonly clock: Clock) {}

  event(type: DeliverableType, customerAccountId: string, subject: string, data: Record<string, unknown>): DomainEvent {
    return { id: randomUUID(), type, customerAccountId, subject, data, occurredAt: this.clock.now() };
  }

  async record<T>(
    events: DomainEvent[],
    target: ChangeTarget,
    change: (changeId: string) => Promise<T | undefined>,
  ): Promise<T | undefined> {
    // Kept as they are now, as the durable outbox stages them before the change: what the change does to the
    // objects afterwards does not reach them.
    const recorded = structuredClone(events);
    const result = await change(randomUUID());
    if (result !== undefined) {
      this.committed.push(...recorded);
      for (const event of recorded) this.targets.set(event.id, structuredClone(target));
    }
    return result;
  }

  async append(events: DomainEvent[]): Promise<void> {
    this.committed.push(...structuredClone(events));
  }
}
