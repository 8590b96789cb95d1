// The durable outbox. Without multi-document transactions an event is written in two steps around the
// change that causes it: staged before, committed after. The change writes the staged events' change id
// into the document it changes (VersionedCollection), so a crash in between leaves a staged event that the
// dispatcher later commits or drops by what that document holds: no event is lost and none is invented.
// Committed events wait here until the dispatcher has handed them to every endpoint (then `dispatched`).
import { randomUUID } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import type { Clock } from '../../../core/src/clock.js';
import type { DocumentLocks } from '../../../core/src/infra/locks.js';
import { deleteOneWhere, updateOneWhere } from '../../../core/src/infra/where.js';
import { changeRecorded } from '../infra/versioned-collection.js';
import { markPlainWrite } from '../infra/change-scope.js';

/** The event types an endpoint can subscribe to (CONTRACT §5.2). */
export const EVENT_TYPES = [
  'patient.created',
  'patient.deleted',
  'app_user.limited',
  'app_user.activated',
  'app_user.tombstoned',
  'connection.created',
  'connection.revoked',
  'webhook_endpoint.disabled',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Sent by `POST /webhook-endpoints/{id}/test` to that endpoint alone; nobody subscribes to it. */
export const TEST_EVENT_TYPE = 'webhook.test';
export type DeliverableType = EventType | typeof TEST_EVENT_TYPE;

export interface DomainEvent {
  id: string;
  type: DeliverableType;
  customerAccountId: string;
  /** The resource the event is about, e.g. "patient:<id>". */
  subject: string;
  /** Identifiers and non-clinical state only: receivers log payloads (CONTRACT §7). */
  data: Record<string, unknown>;
  occurredAt: Date;
  /** Delivered to this endpoint only, whatever it subscribes to (webhook.test). */
  targetEndpointId?: string;
}

/** The document a change writes and the version it leaves it at: where recovery looks for the change's id. */
export interface ChangeTarget {
  collection: string;
  id: string;
  version: number;
}

export type OutboxStatus = 'staged' | 'pending' | 'dispatched';

export interface StoredEvent extends DomainEvent {
  status: OutboxStatus;
  /** How many times a dispatcher has claimed it (more than one: a dispatcher stopped part-way). */
  claims: number;
}

interface OutboxDocument extends Omit<DomainEvent, 'id'> {
  _id: string;
  status: OutboxStatus;
  createdAt: Date;
  claims: number;
  changeId?: string;
  target?: ChangeTarget;
  /** A staged event whose change has not been confirmed by then is settled by recovery. */
  stagedUntil?: Date;
  leaseOwner?: string | null;
  leaseUntil?: Date | null;
  dispatchedAt?: Date;
}

/** What services need to emit events with their changes; Outbox (MongoDB) and FakeOutbox (tests). */
export interface EventOutbox {
  event(type: DeliverableType, customerAccountId: string, subject: string, data: Record<string, unknown>): DomainEvent;
  /**
   * Runs `change(changeId)` with its events recorded durably: staged first, committed once the change
   * succeeded, dropped if it decided there was nothing to do (returned undefined). The change must write
   * `changeId` into `target` (VersionedCollection does, given it). If the change throws, the events stay
   * staged and recovery commits or drops them by what `target` holds.
   */
  record<T>(events: DomainEvent[], target: ChangeTarget, change: (changeId: string) => Promise<T | undefined>): Promise<T | undefined>;
  /** Events that need no change of their own (the delivery system's), committed at once. */
  append(events: DomainEvent[]): Promise<void>;
}

export interface OutboxOptions {
  /** How long a change may take before its staged events are settled by recovery. */
  stageMs?: number;
}

export class Outbox implements EventOutbox {
  private readonly collection: Collection<OutboxDocument>;
  private readonly listeners: ((ids: string[]) => void)[] = [];
  private readonly stageMs: number;

  constructor(
    private readonly db: Db,
    private readonly locks: DocumentLocks,
    private readonly clock: Clock,
    options: OutboxOptions = {},
  ) {
    this.collection = db.collection<OutboxDocument>('outbox_events');
    this.stageMs = options.stageMs ?? 60_000;
  }

  async init(): Promise<void> {
    await this.collection.createIndex({ status: 1, createdAt: 1 });
    await this.collection.createIndex({ customerAccountId: 1, createdAt: 1 });
    await this.collection.createIndex({ customerAccountId: 1, occurredAt: 1, _id: 1 });
  }

  /** Called with the ids of events as they are committed in this process (the dispatcher wakes on it). */
  onCommit(listener: (ids: string[]) => void): void {
    this.listeners.push(listener);
  }

  event(type: DeliverableType, customerAccountId: string, subject: string, data: Record<string, unknown>): DomainEvent {
    return { id: randomUUID(), type, customerAccountId, subject, data, occurredAt: this.clock.now() };
  }

  async record<T>(events: DomainEvent[], target: ChangeTarget, change: (changeId: string) => Promise<T | undefined>): Promise<T | undefined> {
    const changeId = randomUUID();
    const createdAt = this.clock.now();
    const stagedUntil = new Date(createdAt.getTime() + this.stageMs);
    await this.collection.insertMany(events.map((e) => ({ ...toDocument(e, 'staged', createdAt), changeId, target, stagedUntil })));
    // A throw leaves the events staged: the change may have happened all the same, and recovery will know.
    const result = await change(changeId);
    if (result === undefined) {
      for (const event of events) await deleteOneWhere(this.collection, this.locks, event.id, { status: 'staged' });
      return undefined;
    }
    await this.commit(events);
    return result;
  }

  async append(events: DomainEvent[]): Promise<void> {
    if (events.length === 0) return;
    // Inside an idempotent request (webhook test events) the first event is the request's recovery point.
    const mark = await markPlainWrite('outbox_events', events[0]!.id);
    await this.collection.insertMany(events.map((e) => ({ ...toDocument(e, 'pending', this.clock.now()), ...mark })));
    this.notify(events.map((e) => e.id));
  }

  private async commit(events: DomainEvent[]): Promise<void> {
    const committedAt = this.clock.now();
    for (const event of events) {
      const committed = await updateOneWhere(this.collection, this.locks, event.id, { status: 'staged' }, { $set: { status: 'pending', createdAt: committedAt }, $unset: { stagedUntil: '' } });
      // Recovery gave up on a change that took longer than stageMs and dropped the event; it did happen.
      if (!committed && !(await this.collection.findOne({ _id: event.id }))) await this.collection.insertOne(toDocument(event, 'pending', committedAt));
    }
    this.notify(events.map((e) => e.id));
  }

  private notify(ids: string[]): void {
    for (const listener of this.listeners) listener(ids);
  }

  // ——— for the dispatcher ———

  /** Takes a committed event for `owner` until `until`, unless another dispatcher holds it; null otherwise. */
  async claim(id: string, owner: string, until: Date, now: Date): Promise<StoredEvent | null> {
    const doc = await updateOneWhere(this.collection, this.locks, id, { status: 'pending', $or: [{ leaseUntil: null }, { leaseUntil: { $lt: now } }] }, { $set: { leaseOwner: owner, leaseUntil: until }, $inc: { claims: 1 } });
    return doc && toStored(doc);
  }

  /** Extends `owner`'s lease on the event; false when it no longer holds it. */
  async renew(id: string, owner: string, until: Date): Promise<boolean> {
    return (await updateOneWhere(this.collection, this.locks, id, { status: 'pending', leaseOwner: owner }, { $set: { leaseUntil: until } })) !== null;
  }

  /** Hands the event back (a dispatcher that stops part-way), so another takes it at once. */
  async release(id: string, owner: string): Promise<void> {
    await updateOneWhere(this.collection, this.locks, id, { status: 'pending', leaseOwner: owner }, { $set: { leaseOwner: null, leaseUntil: null } });
    this.notify([id]);
  }

  /** The event has reached every endpoint (or their retry queues): done, if `owner` still holds it. */
  async markDispatched(id: string, owner: string): Promise<void> {
    await updateOneWhere(this.collection, this.locks, id, { leaseOwner: owner }, { $set: { status: 'dispatched', dispatchedAt: this.clock.now(), leaseOwner: null, leaseUntil: null } });
  }

  /** Committed events no dispatcher holds (a backstop scan: wake-ups normally find them first). */
  async unclaimed(now: Date, limit: number): Promise<string[]> {
    const docs = await this.collection
      .find({ status: 'pending', $or: [{ leaseUntil: null }, { leaseUntil: { $lt: now } }] }, { projection: { _id: 1 } })
      .sort({ createdAt: 1 })
      .limit(limit)
      .toArray();
    return docs.map((d) => d._id);
  }

  /** Committed events waiting for dispatch, and how long the oldest has waited (for metrics). */
  async backlog(now: Date): Promise<{ pending: number; oldestMs: number }> {
    const pending = await this.collection.countDocuments({ status: 'pending' });
    const oldest = await this.collection.find({ status: 'pending' }, { projection: { createdAt: 1 } }).sort({ createdAt: 1 }).limit(1).next();
    return { pending, oldestMs: oldest ? Math.max(0, now.getTime() - oldest.createdAt.getTime()) : 0 };
  }

  /**
   * Settles staged events whose change had time to finish: committed when the target document records the
   * change, dropped when it does not. Returns how many of each.
   */
  async recoverStaged(now: Date, limit = 100): Promise<{ committed: number; dropped: number }> {
    const stale = await this.collection.find({ status: 'staged', stagedUntil: { $lt: now } }).limit(limit).toArray();
    const outcome = { committed: 0, dropped: 0 };
    for (const doc of stale) {
      const target = doc.target;
      const written = target && (await this.db.collection<{ _id: string; _version?: number; _changes?: Record<string, string> }>(target.collection).findOne({ _id: target.id }));
      const happened = target !== undefined && doc.changeId !== undefined && changeRecorded(written ?? null, target.version, doc.changeId);
      if (happened) {
        if (await updateOneWhere(this.collection, this.locks, doc._id, { status: 'staged' }, { $set: { status: 'pending', createdAt: now }, $unset: { stagedUntil: '' } })) {
          outcome.committed++;
          this.notify([doc._id]);
        }
      } else if (await deleteOneWhere(this.collection, this.locks, doc._id, { status: 'staged' })) {
        outcome.dropped++;
      }
    }
    return outcome;
  }

  async get(id: string): Promise<StoredEvent | null> {
    const doc = await this.collection.findOne({ _id: id });
    return doc && toStored(doc);
  }

  /** One page of the account's dispatched events since `since`, oldest first, after `after` (recover). */
  async since(customerAccountId: string, since: Date, limit: number, after?: { occurredAt: Date; id: string }): Promise<StoredEvent[]> {
    const position = after ? { $or: [{ occurredAt: { $gt: after.occurredAt } }, { occurredAt: after.occurredAt, _id: { $gt: after.id } }] } : {};
    const docs = await this.collection
      .find({ customerAccountId, status: 'dispatched', occurredAt: { $gte: since }, ...position })
      .sort({ occurredAt: 1, _id: 1 })
      .limit(limit)
      .toArray();
    return docs.map(toStored);
  }

  /** Dispatched events older than `before` go (they were kept for recover, which reaches 14 days back). */
  async prune(before: Date): Promise<number> {
    return (await this.collection.deleteMany({ status: 'dispatched', occurredAt: { $lt: before } })).deletedCount;
  }

  /** For tests: the events of an account in the order they were recorded. */
  async list(customerAccountId: string, status?: OutboxStatus): Promise<StoredEvent[]> {
    const docs = await this.collection
      .find({ customerAccountId, ...(status ? { status } : {}) })
      .sort({ createdAt: 1, _id: 1 })
      .toArray();
    return docs.map(toStored);
  }
}

function toDocument(event: DomainEvent, status: OutboxStatus, createdAt: Date): OutboxDocument {
  const { id, ...rest } = event;
  return { _id: id, ...rest, status, createdAt, claims: 0 };
}

function toStored(doc: OutboxDocument): StoredEvent {
  return {
    id: doc._id,
    type: doc.type,
    customerAccountId: doc.customerAccountId,
    subject: doc.subject,
    data: doc.data,
    occurredAt: doc.occurredAt,
    ...(doc.targetEndpointId !== undefined && { targetEndpointId: doc.targetEndpointId }),
    status: doc.status,
    claims: doc.claims ?? 0,
  };
}
