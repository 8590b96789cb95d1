// In-memory EventQueue for unit tests of what reads or works the dispatcher's queue (a webhook endpoint's recover,
// the dispatcher); test/api/features/events/event-queue.test.ts holds it and MongoEventQueue to the same behaviour
// (docs/architecture.md, "Stores and fakes" and "Outbox"): a committed event is held by one dispatcher at a time on
// a lease, done once, and kept a while for recover. Events arrive committed, by `append` (the durable queue's come
// from the outbox in the same collection); the fake keeps no staged events (fake-outbox.ts).
import type { Clock } from '#core/clock.js';
import type { DomainEvent } from './domain-event.js';
import type { EventQueue, QueuePosition } from './event-queue.js';
import type { OutboxStatus, StoredEvent } from './outbox-collection.js';

interface Entry {
  event: DomainEvent;
  status: OutboxStatus;
  claims: number;
  /** When it was committed: the order the backstop scan finds events in, and the backlog's age. */
  createdAt: Date;
  leaseOwner: string | null;
  leaseUntil: Date | null;
}

export class FakeEventQueue implements EventQueue {
  /** By event id, in the order they were committed. */
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly clock: Clock) {}

  /** Commits events, as the outbox does with a change's or with its own (Outbox.append): pending, at once. */
  async append(events: DomainEvent[]): Promise<void> {
    const createdAt = this.clock.now();
    for (const event of events)
      this.entries.set(event.id, {
        event: structuredClone(event),
        status: 'pending',
        claims: 0,
        createdAt,
        leaseOwner: null,
        leaseUntil: null,
      });
  }

  async claim(id: string, owner: string, until: Date, now: Date): Promise<StoredEvent | null> {
    const entry = this.entries.get(id);
    if (!entry || !unheld(entry, now)) return null;
    Object.assign(entry, { leaseOwner: owner, leaseUntil: new Date(until), claims: entry.claims + 1 });
    return stored(entry);
  }

  async settleUntargeted(id: string, now: Date): Promise<boolean> {
    const entry = this.entries.get(id);
    if (!entry || !unheld(entry, now)) return false;
    dispatched(entry);
    return true;
  }

  async renew(id: string, owner: string, until: Date): Promise<boolean> {
    const entry = this.entries.get(id);
    if (!entry || entry.status !== 'pending' || entry.leaseOwner !== owner) return false;
    entry.leaseUntil = new Date(until);
    return true;
  }

  async release(id: string, owner: string): Promise<void> {
    const entry = this.entries.get(id);
    if (entry && entry.status === 'pending' && entry.leaseOwner === owner)
      Object.assign(entry, { leaseOwner: null, leaseUntil: null });
  }

  async markDispatched(id: string, owner: string): Promise<void> {
    // The repository's condition is the owner alone: whoever holds the lease, lapsed or not, until another claims it.
    const entry = this.entries.get(id);
    if (entry && entry.leaseOwner === owner) dispatched(entry);
  }

  async unclaimed(now: Date, limit: number): Promise<string[]> {
    return this.committedOldestFirst()
      .filter((entry) => unheld(entry, now))
      .slice(0, limit)
      .map((entry) => entry.event.id);
  }

  async backlog(now: Date): Promise<{ pending: number; oldestMs: number }> {
    const pending = this.committedOldestFirst().filter((entry) => entry.status === 'pending');
    const oldest = pending[0];
    return {
      pending: pending.length,
      oldestMs: oldest ? Math.max(0, now.getTime() - oldest.createdAt.getTime()) : 0,
    };
  }

  async get(id: string): Promise<StoredEvent | null> {
    const entry = this.entries.get(id);
    return entry ? stored(entry) : null;
  }

  async since(customerAccountId: string, since: Date, limit: number, after?: QueuePosition): Promise<StoredEvent[]> {
    return [...this.entries.values()]
      .filter(
        ({ event, status }) =>
          event.customerAccountId === customerAccountId &&
          status === 'dispatched' &&
          event.occurredAt >= since &&
          (after === undefined || compare(event, after) > 0),
      )
      .sort((a, b) => compare(a.event, b.event))
      .slice(0, limit)
      .map(stored);
  }

  async prune(before: Date): Promise<number> {
    let pruned = 0;
    for (const [id, entry] of this.entries)
      if (entry.status === 'dispatched' && entry.event.occurredAt < before && this.entries.delete(id)) pruned++;
    return pruned;
  }

  /** Sorted by commit time; events committed at one instant in the order they came. */
  private committedOldestFirst(): Entry[] {
    return [...this.entries.values()].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  }
}

/** A committed event no dispatcher holds: never claimed, released, or its lease has ended. */
const unheld = (entry: Entry, now: Date): boolean =>
  entry.status === 'pending' && (entry.leaseUntil === null || entry.leaseUntil < now);

/** Done, and nobody's any more. */
function dispatched(entry: Entry): void {
  Object.assign(entry, { status: 'dispatched', leaseOwner: null, leaseUntil: null });
}

/** The order of `since`: by occurrence, then by id. */
function compare(a: { occurredAt: Date; id: string }, b: { occurredAt: Date; id: string }): number {
  const byTime = a.occurredAt.getTime() - b.occurredAt.getTime();
  return byTime !== 0 ? byTime : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function stored(entry: Entry): StoredEvent {
  return { ...structuredClone(entry.event), status: entry.status, claims: entry.claims };
}
