// Webhook deliveries at rest: the retry queue (webhook_deliveries: one document per event and endpoint that
// waits for a later attempt, leased by the dispatcher working on it) and the attempt log customers read
// (webhook_attempts: one record per attempt made, plus one PENDING record per attempt scheduled, kept 30 days).
// First attempts are made straight from the outbox; only what must wait is queued, so a healthy endpoint
// costs the database no queue writes.
import type { Collection, Db, Filter } from 'mongodb';
import { v7 as uuidv7 } from 'uuid';
import type { DocumentLocks } from '#core/infra/locks.js';
import { deleteOneWhere, updateOneWhere } from '#core/infra/where.js';
import type { DeliverableType } from '../../events/index.js';
import { through, isDuplicateKey } from '#core/infra/mongo.js';

export type Trigger = 'SCHEDULED' | 'MANUAL' | 'RECOVER';
export type AttemptStatus = 'SUCCEEDED' | 'FAILED' | 'PENDING';

/** One line of the attempt log. */
export interface AttemptRecord {
  /** Time-ordered (UUIDv7): the log is newest first by id. */
  id: string;
  accountId: string;
  endpointId: string;
  eventId: string;
  eventType: DeliverableType;
  /** 1 for the first attempt at this event for this endpoint. */
  attempt: number;
  trigger: Trigger;
  status: AttemptStatus;
  responseStatus: number | null;
  durationMs: number | null;
  error: string | null;
  /** When the attempt was made (null while PENDING, or when it was cancelled before being made). */
  attemptedAt: Date | null;
  /** When the next attempt is (or was) due: for a PENDING record, its own time. */
  nextAttemptAt: Date | null;
  createdAt: Date;
}

/** A delivery waiting in the retry queue. */
export interface QueuedDelivery {
  /** `<event id>:<endpoint id>`: an event waits at most once per endpoint. */
  id: string;
  accountId: string;
  endpointId: string;
  eventId: string;
  eventType: DeliverableType;
  /** The number of the attempt to make. */
  attempt: number;
  trigger: Trigger;
  nextAttemptAt: Date;
  /** The PENDING log record this attempt settles. */
  logId: string;
  createdAt: Date;
}

type AttemptDocument = Omit<AttemptRecord, 'id'> & { _id: string };
type QueueDocument = Omit<QueuedDelivery, 'id'> & { _id: string; leaseOwner: string | null; leaseUntil: Date | null };

export const newAttemptId = (): string => uuidv7();
export const deliveryId = (eventId: string, endpointId: string): string => `${eventId}:${endpointId}`;

export interface AttemptPage {
  items: AttemptRecord[];
  hasMore: boolean;
}

/**
 * What the services need of deliveries (the endpoints' service cancels, the deliveries' service reads the log and
 * queues recovered events): DeliveryRepository (MongoDB) and FakeDeliveryStore (tests). The dispatcher and the
 * recorder work on the repository itself.
 */
export interface DeliveryStore {
  /** The endpoint's log, newest first, strictly older than `before` (an attempt id). */
  list(
    accountId: string,
    endpointId: string,
    options: { limit: number; status?: AttemptStatus; before?: string },
  ): Promise<AttemptPage>;
  /** For each of `eventIds`, the attempts made for the endpoint and whether one succeeded (recover, re-dispatch). */
  history(endpointId: string, eventIds: string[]): Promise<Map<string, { attempts: number; succeeded: boolean }>>;
  /**
   * Queues deliveries with their PENDING log records; one already queued for the same event and endpoint is left
   * as it is. Returns those queued now.
   */
  enqueue(deliveries: QueuedDelivery[]): Promise<QueuedDelivery[]>;
  /** Drops every queued delivery to an endpoint; their PENDING records say why they were not made. */
  cancel(accountId: string, endpointId: string, reason: string): Promise<number>;
}

export class DeliveryRepository implements DeliveryStore {
  private readonly attempts: Collection<AttemptDocument>;
  private readonly queue: Collection<QueueDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
  ) {
    this.attempts = db.collection<AttemptDocument>('webhook_attempts');
    this.queue = db.collection<QueueDocument>('webhook_deliveries');
  }

  /** `indexes`: the database handle index builds go through (they can take long). */
  async init(indexes?: Db): Promise<void> {
    await through(this.attempts, indexes).createIndex({ accountId: 1, endpointId: 1, _id: -1 });
    await through(this.attempts, indexes).createIndex({ eventId: 1, endpointId: 1 });
    await through(this.attempts, indexes).createIndex({ createdAt: 1 });
    await through(this.queue, indexes).createIndex({ nextAttemptAt: 1 });
    await through(this.queue, indexes).createIndex({ accountId: 1, endpointId: 1 });
  }

  // ——— the attempt log ———

  /** Records attempts made (a batch: one write). */
  async log(records: AttemptRecord[]): Promise<void> {
    if (records.length === 0) return;
    await this.attempts.insertMany(records.map(toAttemptDocument), { ordered: false });
  }

  /** Writes the outcome into a scheduled (PENDING) record, creating it if it was never written. */
  async settle(record: AttemptRecord): Promise<void> {
    const { _id, ...fields } = toAttemptDocument(record);
    await this.attempts.updateOne({ _id }, { $set: fields }, { upsert: true });
  }

  /** The endpoint's log, newest first, strictly older than `before` (an attempt id). */
  async list(
    accountId: string,
    endpointId: string,
    options: { limit: number; status?: AttemptStatus; before?: string },
  ): Promise<AttemptPage> {
    const filter: Filter<AttemptDocument> = {
      accountId,
      endpointId,
      ...(options.status && { status: options.status }),
      ...(options.before && { _id: { $lt: options.before } }),
    };
    const docs = await this.attempts
      .find(filter)
      .sort({ _id: -1 })
      .limit(options.limit + 1)
      .toArray();
    return { items: docs.slice(0, options.limit).map(toAttempt), hasMore: docs.length > options.limit };
  }

  async get(accountId: string, id: string): Promise<AttemptRecord | null> {
    const doc = await this.attempts.findOne({ _id: id });
    return doc && doc.accountId === accountId ? toAttempt(doc) : null;
  }

  /** For each of `eventIds`, the attempts made for the endpoint and whether one succeeded (recover, re-dispatch). */
  async history(
    endpointId: string,
    eventIds: string[],
  ): Promise<Map<string, { attempts: number; succeeded: boolean }>> {
    const history = new Map<string, { attempts: number; succeeded: boolean }>();
    if (eventIds.length === 0) return history;
    const docs = await this.attempts
      .find(
        { endpointId, eventId: { $in: eventIds }, attemptedAt: { $ne: null } },
        { projection: { eventId: 1, status: 1 } },
      )
      .toArray();
    for (const doc of docs) {
      const entry = history.get(doc.eventId) ?? { attempts: 0, succeeded: false };
      entry.attempts++;
      entry.succeeded ||= doc.status === 'SUCCEEDED';
      history.set(doc.eventId, entry);
    }
    return history;
  }

  /** Whether the delivery `id` is in the retry queue (re-dispatch after a dispatcher stopped part-way). */
  async isQueued(id: string): Promise<boolean> {
    return (await this.queue.findOne({ _id: id }, { projection: { _id: 1 } })) !== null;
  }

  /** Log records older than `before` go (the log is kept 30 days). */
  async prune(before: Date): Promise<number> {
    return (await this.attempts.deleteMany({ createdAt: { $lt: before } })).deletedCount;
  }

  // ——— the retry queue ———

  /** Queues deliveries with their PENDING log records; one already queued for the same event and endpoint is left as it
   * is. Returns those queued now. */
  async enqueue(deliveries: QueuedDelivery[]): Promise<QueuedDelivery[]> {
    const queued: QueuedDelivery[] = [];
    for (const delivery of deliveries) {
      const { id, ...rest } = delivery;
      try {
        await this.queue.insertOne({ _id: id, ...rest, leaseOwner: null, leaseUntil: null });
      } catch (error) {
        if (isDuplicateKey(error)) continue;
        throw error;
      }
      await this.settle(pendingRecord(delivery));
      queued.push(delivery);
    }
    return queued;
  }

  /** Takes a due delivery for `owner` until `until`, unless it is not due or another dispatcher holds it. */
  async claim(id: string, owner: string, until: Date, now: Date): Promise<QueuedDelivery | null> {
    const doc = await updateOneWhere(
      this.queue,
      this.locks,
      id,
      { nextAttemptAt: { $lte: now }, $or: [{ leaseUntil: null }, { leaseUntil: { $lt: now } }] },
      { $set: { leaseOwner: owner, leaseUntil: until } },
    );
    return doc && toQueued(doc);
  }

  /** The claimed delivery waits again, for its next attempt (with a new PENDING record). */
  async reschedule(delivery: QueuedDelivery, owner: string): Promise<boolean> {
    const { id, ...rest } = delivery;
    const moved = await updateOneWhere(
      this.queue,
      this.locks,
      id,
      { leaseOwner: owner },
      { $set: { ...rest, leaseOwner: null, leaseUntil: null } },
    );
    if (moved) await this.settle(pendingRecord(delivery));
    return moved !== null;
  }

  /** The claimed delivery is done (delivered, or given up on). */
  finish(id: string, owner: string): Promise<boolean> {
    return deleteOneWhere(this.queue, this.locks, id, { leaseOwner: owner });
  }

  /** Due deliveries no dispatcher holds, soonest first (a backstop scan: timers normally find them first). */
  async due(now: Date, limit: number): Promise<string[]> {
    const docs = await this.queue
      .find(
        { nextAttemptAt: { $lte: now }, $or: [{ leaseUntil: null }, { leaseUntil: { $lt: now } }] },
        { projection: { _id: 1 } },
      )
      .sort({ nextAttemptAt: 1 })
      .limit(limit)
      .toArray();
    return docs.map((d) => d._id);
  }

  /** Drops every queued delivery to an endpoint; their PENDING records say why they were not made. */
  async cancel(accountId: string, endpointId: string, reason: string): Promise<number> {
    const docs = await this.queue.find({ accountId, endpointId }).toArray();
    let cancelled = 0;
    for (const doc of docs) {
      if (!(await deleteOneWhere(this.queue, this.locks, doc._id, {}))) continue;
      cancelled++;
      await this.settle({ ...pendingRecord(toQueued(doc)), status: 'FAILED', error: `not attempted: ${reason}` });
    }
    return cancelled;
  }

  /** Queued deliveries, and how long the most overdue one has been due (for metrics). */
  async backlog(now: Date): Promise<{ queued: number; oldestDueMs: number }> {
    const queued = await this.queue.countDocuments({});
    const oldest = await this.queue
      .find({ nextAttemptAt: { $lte: now } }, { projection: { nextAttemptAt: 1 } })
      .sort({ nextAttemptAt: 1 })
      .limit(1)
      .next();
    return { queued, oldestDueMs: oldest ? Math.max(0, now.getTime() - oldest.nextAttemptAt.getTime()) : 0 };
  }
}

/** The log record of a scheduled attempt, before it is made. */
export function pendingRecord(delivery: QueuedDelivery): AttemptRecord {
  return {
    id: delivery.logId,
    accountId: delivery.accountId,
    endpointId: delivery.endpointId,
    eventId: delivery.eventId,
    eventType: delivery.eventType,
    attempt: delivery.attempt,
    trigger: delivery.trigger,
    status: 'PENDING',
    responseStatus: null,
    durationMs: null,
    error: null,
    attemptedAt: null,
    nextAttemptAt: delivery.nextAttemptAt,
    createdAt: delivery.createdAt,
  };
}

function toAttemptDocument(record: AttemptRecord): AttemptDocument {
  const { id, ...rest } = record;
  return { _id: id, ...rest };
}

function toAttempt(doc: AttemptDocument): AttemptRecord {
  const { _id, ...rest } = doc;
  return { id: _id, ...rest };
}

function toQueued(doc: QueueDocument): QueuedDelivery {
  const { _id, leaseOwner: _owner, leaseUntil: _until, ...rest } = doc;
  return { id: _id, ...rest };
}
