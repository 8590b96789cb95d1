// The dispatcher's queue (docs/api.md, "Receiving webhooks"; docs/architecture.md, "Outbox"): committed events,
// each taken by one dispatcher at a time on a lease (so a replica that dies only delays its events until the lease
// ends), marked dispatched once every endpoint has it, and kept a while after for recover. The dispatcher depends
// on EventQueue alone; MongoEventQueue keeps it in outbox_events, beside the staged events of outbox.ts.
import type { Collection, Db, Filter, UpdateFilter } from 'mongodb';
import type { Clock } from '#core/clock.js';
import type { DocumentLocks } from '#core/infra/locks.js';
import { updateOneWhere } from '#core/infra/where.js';
import {
  CommitListeners,
  OUTBOX_EVENTS,
  toStored,
  type CommitAnnouncer,
  type CommitListener,
  type OutboxDocument,
  type StoredEvent,
} from './outbox-collection.js';

/** Where a page of `since` ends: the last event it held. */
export interface QueuePosition {
  occurredAt: Date;
  id: string;
}

export interface EventQueue {
  /** Takes a committed event for `owner` until `until`, unless another dispatcher holds it; null otherwise. */
  claim(id: string, owner: string, until: Date, now: Date): Promise<StoredEvent | null>;
  /**
   * A committed event no endpoint is to hear: done in one write (what a claim, no attempt and markDispatched
   * come to), unless a dispatcher holds it or it is done already; false then.
   */
  settleUntargeted(id: string, now: Date): Promise<boolean>;
  /** Extends `owner`'s lease on the event; false when it no longer holds it. */
  renew(id: string, owner: string, until: Date): Promise<boolean>;
  /** Hands the event back (a dispatcher that stops part-way), so another takes it at once. */
  release(id: string, owner: string): Promise<void>;
  /** The event has reached every endpoint (or their retry queues): done, if `owner` still holds it. */
  markDispatched(id: string, owner: string): Promise<void>;
  /** Committed events no dispatcher holds (a backstop scan: wake-ups normally find them first). */
  unclaimed(now: Date, limit: number): Promise<string[]>;
  /** Committed events waiting for dispatch, and how long the oldest has waited (for metrics). */
  backlog(now: Date): Promise<{ pending: number; oldestMs: number }>;
  get(id: string): Promise<StoredEvent | null>;
  /** One page of the account's dispatched events since `since`, oldest first, after `after` (recover). */
  since(customerAccountId: string, since: Date, limit: number, after?: QueuePosition): Promise<StoredEvent[]>;
  /** Dispatched events older than `before` go (they were kept for recover, which reaches 14 days back). */
  prune(before: Date): Promise<number>;
}

/** A committed event no dispatcher holds: never claimed, released, or its lease has ended. */
const unheld = (now: Date): Filter<OutboxDocument> => ({
  status: 'pending',
  $or: [{ leaseUntil: null }, { leaseUntil: { $lt: now } }],
});

/** Done, and nobody's any more. */
const toDispatched = (at: Date): UpdateFilter<OutboxDocument> => ({
  $set: { status: 'dispatched', dispatchedAt: at, leaseOwner: null, leaseUntil: null },
});

export class MongoEventQueue implements EventQueue {
  private readonly collection: Collection<OutboxDocument>;
  private readonly listeners: CommitListeners;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
    private readonly clock: Clock,
    /** Told of the events handed back here (release). */
    options: { announcer?: CommitAnnouncer } = {},
  ) {
    this.collection = db.collection<OutboxDocument>(OUTBOX_EVENTS);
    this.listeners = new CommitListeners(options.announcer);
  }

  /** Called with the ids of events handed back here (release), as Outbox.onCommit is with those it commits. */
  onCommit(listener: CommitListener): void {
    this.listeners.add(listener);
  }

  async claim(id: string, owner: string, until: Date, now: Date): Promise<StoredEvent | null> {
    const update = { $set: { leaseOwner: owner, leaseUntil: until }, $inc: { claims: 1 } };
    const doc = await updateOneWhere(this.collection, this.locks, id, unheld(now), update);
    return doc && toStored(doc);
  }

  async settleUntargeted(id: string, now: Date): Promise<boolean> {
    const done = await updateOneWhere(this.collection, this.locks, id, unheld(now), toDispatched(this.clock.now()));
    return done !== null;
  }

  async renew(id: string, owner: string, until: Date): Promise<boolean> {
    const held = { status: 'pending' as const, leaseOwner: owner };
    return (await updateOneWhere(this.collection, this.locks, id, held, { $set: { leaseUntil: until } })) !== null;
  }

  async release(id: string, owner: string): Promise<void> {
    const held = { status: 'pending' as const, leaseOwner: owner };
    await updateOneWhere(this.collection, this.locks, id, held, { $set: { leaseOwner: null, leaseUntil: null } });
    this.listeners.notify([id]);
  }

  async markDispatched(id: string, owner: string): Promise<void> {
    await updateOneWhere(this.collection, this.locks, id, { leaseOwner: owner }, toDispatched(this.clock.now()));
  }

  async unclaimed(now: Date, limit: number): Promise<string[]> {
    const docs = await this.collection
      .find(unheld(now), { projection: { _id: 1 } })
      .sort({ createdAt: 1 })
      .limit(limit)
      .toArray();
    return docs.map((d) => d._id);
  }

  async backlog(now: Date): Promise<{ pending: number; oldestMs: number }> {
    const pending = await this.collection.countDocuments({ status: 'pending' });
    const oldest = await this.collection
      .find({ status: 'pending' }, { projection: { createdAt: 1 } })
      .sort({ createdAt: 1 })
      .limit(1)
      .next();
    return { pending, oldestMs: oldest ? Math.max(0, now.getTime() - oldest.createdAt.getTime()) : 0 };
  }

  async get(id: string): Promise<StoredEvent | null> {
    const doc = await this.collection.findOne({ _id: id });
    return doc && toStored(doc);
  }

  async since(customerAccountId: string, since: Date, limit: number, after?: QueuePosition): Promise<StoredEvent[]> {
    const position = after
      ? { $or: [{ occurredAt: { $gt: after.occurredAt } }, { occurredAt: after.occurredAt, _id: { $gt: after.id } }] }
      : {};
    const docs = await this.collection
      .find({ customerAccountId, status: 'dispatched', occurredAt: { $gte: since }, ...position })
      .sort({ occurredAt: 1, _id: 1 })
      .limit(limit)
      .toArray();
    return docs.map(toStored);
  }

  async prune(before: Date): Promise<number> {
    return (await this.collection.deleteMany({ status: 'dispatched', occurredAt: { $lt: before } })).deletedCount;
  }
}
