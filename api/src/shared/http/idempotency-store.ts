// Where idempotency records live: in MongoDB, beside the data they protect (docs/api.md, "Rules every operation
// follows"), so that they survive any process or store failing. One document per (credential, key) scope, `_id` = the
// scope hash. claim() is an insert (a unique _id decides, on MongoDB and FerretDB alike, so exactly one claim wins);
// every later step is a conditional write on the claim's owner (core/src/infra/where.ts), so a claim that was taken
// over can no longer touch the record. On the embedded database, though, a conditional write is checked under its
// lock and then made by _id, so one whose request gave up on it (a deadline) may land later on whatever record is
// there by then. Every write is therefore shaped so that landing late does no harm: a claim is handed back by naming
// its owner in `releasedBy` (it counts only while that owner still holds the claim), never deleted; a take-over
// changes the owner, lease and claimant's fingerprint but never the state or the recovery points (a take-over landing
// on a finished record leaves its outcome alone, and one landing on a newer claim only makes the next request ask all
// of that claim's recovery points). No Redis: it would only be a cache in front of a primary-key read, and never a
// copy that correctness may depend on.
import type { Collection, Db } from 'mongodb';
import { MongoServerError } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import { deleteOneWhere, updateOneWhere } from '#core/infra/where.js';
import { through, isDuplicateKey } from '#core/infra/mongo.js';
import { recoveryPointReached, type RecoveryPoint } from '../infra/change-scope.js';

/** A running claim, with the recovery points its execution recorded before each write. */
export interface RunningRecord {
  state: 'running';
  fingerprint: string;
  owner: string;
  /** Until then the owner is presumed alive (it renews); after it, a retry may recover the key. */
  leaseUntil: number;
  expiresAt: number;
  targets: RecoveryPoint[];
  /** Handed back by its owner after a failure that changed nothing: the key is free for any request. */
  released?: boolean;
  /** Counts the writes to the claim (a take-over names the one it judged, see takeOver). */
  revision?: number;
}

/** A stored outcome, sealed (encrypted) by the middleware: the store never holds readable responses. */
export interface DoneRecord {
  state: 'done';
  fingerprint: string;
  sealed: string;
  expiresAt: number;
}

export type IdempotencyRecord = RunningRecord | DoneRecord;

/** What a take-over judged of a running claim: whose it was and how it stood. */
export type Judged = Pick<RunningRecord, 'owner' | 'leaseUntil' | 'revision'>;

export interface IdempotencyStore {
  /** Stores `running` unless a live record exists; returns that live record, or null when the claim won. */
  claim(scope: string, running: RunningRecord, now: number): Promise<IdempotencyRecord | null>;
  /**
   * Replaces the running claim `judged` (as read: its lease expired or it was handed back, and nothing of it
   * happened) by `running`, only if the claim was not written since it was read.
   */
  takeOver(scope: string, judged: Judged, running: RunningRecord): Promise<boolean>;
  /** Appends a recovery point to the owner's claim and extends its lease; false when the claim is not the owner's. */
  addTarget(scope: string, owner: string, target: RecoveryPoint, leaseUntil: number): Promise<boolean>;
  /** Moves the owner's lease to `leaseUntil` (later while it runs, `now` to hand it to recovery at once). */
  renew(scope: string, owner: string, leaseUntil: number): Promise<boolean>;
  /** Replaces the owner's running claim with the outcome; false when the claim is not the owner's. */
  complete(scope: string, owner: string, done: DoneRecord): Promise<boolean>;
  /** Hands a running claim back (released, its lease no longer counts), only if it is still the owner's; whether it
   * was. */
  release(scope: string, owner: string): Promise<boolean>;
  /** Whether the change a recovery point announced happened. */
  reached(target: RecoveryPoint): Promise<boolean>;
  /** Deletes up to `limit` expired records; how many. */
  sweep(now: number, limit: number): Promise<number>;
}

export const IDEMPOTENCY_RECORDS = 'idempotency_records';

interface RecordDocument {
  _id: string;
  state: 'running' | 'done';
  fingerprint: string;
  expiresAt: Date;
  owner?: string;
  leaseUntil?: Date;
  targets?: RecoveryPoint[];
  sealed?: string;
  /** The owner that handed the claim back; counts only while it is still `owner`. */
  releasedBy?: string;
  /** The fingerprint of the request that took the claim over (`fingerprint` stays the first claimant's). */
  claimFingerprint?: string;
  /** +1 on every write to the claim; absent on records written before it existed (read as 0). */
  revision?: number;
}

const CLAIM_ATTEMPTS = 5;

export class MongoIdempotencyStore implements IdempotencyStore {
  private readonly collection: Collection<RecordDocument>;

  constructor(
    private readonly db: Db,
    private readonly locks: DocumentLocks,
  ) {
    this.collection = db.collection<RecordDocument>(IDEMPOTENCY_RECORDS);
  }

  /** On MongoDB a TTL index collects expired records; FerretDB v1 has none (sweep() does it there, and everywhere). */
  async init(indexes?: Db): Promise<void> {
    try {
      await through(this.collection, indexes).createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0 });
    } catch (error) {
      if (!(error instanceof MongoServerError) || !/expireAfterSeconds/.test(error.message)) throw error;
    }
  }

  async claim(scope: string, running: RunningRecord, now: number): Promise<IdempotencyRecord | null> {
    for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
      try {
        await this.collection.insertOne(toDocument(scope, running));
        return null;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const current = await this.collection.findOne({ _id: scope });
      if (!current) continue; // released or swept meanwhile: claim again
      if (current.expiresAt.getTime() > now) return toRecord(current);
      // Expired (liveness is the record's own expiresAt, on the injected clock): only that one goes.
      await deleteOneWhere(this.collection, this.locks, scope, { expiresAt: { $lte: new Date(now) } });
    }
    throw new Error('idempotency: the claim kept changing hands');
  }

  /**
   * Conditional on the claim being as it was judged, which closes a race: an owner whose lease ran out while it
   * was still alive (its renewals failed: Redis or the database stalled) may record a recovery point, and write,
   * between a retry's read of the expired claim and its take-over; a take-over judged on that read would then
   * run the operation again. Every write to a claim increments `revision`; the lease is compared too, which
   * every recovery point and renewal moves, also those of a replica older than `revision` (a rolling upgrade).
   */
  async takeOver(scope: string, judged: Judged, running: RunningRecord): Promise<boolean> {
    const fields = {
      owner: running.owner,
      leaseUntil: new Date(running.leaseUntil),
      expiresAt: new Date(running.expiresAt),
      claimFingerprint: running.fingerprint,
    };
    const revision = judged.revision ?? 0;
    const condition = {
      state: 'running' as const,
      owner: judged.owner,
      leaseUntil: new Date(judged.leaseUntil),
      revision: revision === 0 ? { $exists: false } : revision,
    };
    return (
      (await updateOneWhere(this.collection, this.locks, scope, condition, {
        $set: fields,
        $unset: { releasedBy: '' },
        $inc: { revision: 1 },
      })) !== null
    );
  }

  async addTarget(scope: string, owner: string, target: RecoveryPoint, leaseUntil: number): Promise<boolean> {
    return (
      (await updateOneWhere(
        this.collection,
        this.locks,
        scope,
        { state: 'running', owner },
        { $push: { targets: target }, $set: { leaseUntil: new Date(leaseUntil) }, $inc: { revision: 1 } },
      )) !== null
    );
  }

  async renew(scope: string, owner: string, leaseUntil: number): Promise<boolean> {
    return (
      (await updateOneWhere(
        this.collection,
        this.locks,
        scope,
        { state: 'running', owner },
        { $set: { leaseUntil: new Date(leaseUntil) }, $inc: { revision: 1 } },
      )) !== null
    );
  }

  async complete(scope: string, owner: string, done: DoneRecord): Promise<boolean> {
    const update = {
      $set: {
        state: 'done' as const,
        fingerprint: done.fingerprint,
        sealed: done.sealed,
        expiresAt: new Date(done.expiresAt),
      },
      $unset: {
        owner: '' as const,
        leaseUntil: '' as const,
        targets: '' as const,
        releasedBy: '' as const,
        claimFingerprint: '' as const,
      },
      $inc: { revision: 1 },
    };
    return (await updateOneWhere(this.collection, this.locks, scope, { state: 'running', owner }, update)) !== null;
  }

  async release(scope: string, owner: string): Promise<boolean> {
    return (
      (await updateOneWhere(
        this.collection,
        this.locks,
        scope,
        { state: 'running', owner },
        { $set: { releasedBy: owner }, $inc: { revision: 1 } },
      )) !== null
    );
  }

  reached(target: RecoveryPoint): Promise<boolean> {
    return recoveryPointReached(this.db, target);
  }

  async sweep(now: number, limit: number): Promise<number> {
    const before = new Date(now);
    const expired = await this.collection
      .find({ expiresAt: { $lte: before } }, { projection: { _id: 1 } })
      .limit(limit)
      .toArray();
    let deleted = 0;
    // One conditional delete each: a record claimed afresh meanwhile is not expired and stays.
    for (const { _id } of expired)
      if (await deleteOneWhere(this.collection, this.locks, _id, { expiresAt: { $lte: before } })) deleted++;
    return deleted;
  }
}

function toDocument(scope: string, record: IdempotencyRecord): RecordDocument {
  if (record.state === 'done')
    return {
      _id: scope,
      state: 'done',
      fingerprint: record.fingerprint,
      sealed: record.sealed,
      expiresAt: new Date(record.expiresAt),
    };
  return {
    _id: scope,
    state: 'running',
    fingerprint: record.fingerprint,
    owner: record.owner,
    leaseUntil: new Date(record.leaseUntil),
    expiresAt: new Date(record.expiresAt),
    targets: record.targets,
  };
}

function toRecord(doc: RecordDocument): IdempotencyRecord {
  if (doc.state === 'done')
    return {
      state: 'done',
      fingerprint: doc.fingerprint,
      sealed: doc.sealed ?? '',
      expiresAt: doc.expiresAt.getTime(),
    };
  const released = doc.releasedBy !== undefined && doc.releasedBy === doc.owner;
  return {
    state: 'running',
    fingerprint: doc.claimFingerprint ?? doc.fingerprint,
    owner: doc.owner ?? '',
    leaseUntil: doc.leaseUntil?.getTime() ?? 0,
    expiresAt: doc.expiresAt.getTime(),
    targets: doc.targets ?? [],
    revision: doc.revision ?? 0,
    ...(released && { released: true }),
  };
}
