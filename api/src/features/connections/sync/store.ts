// connection_syncs: one document per signed-in connection (_id the connection id): where its sync stands (what
// `GET /app-users/{id}` shows), when the next is due, and the run in progress: the replica holding it until when,
// the page to read next and what it has stored so far, so a run whose replica died is taken over where it
// stopped. A run is claimed and finished by conditional writes on `_version` (a run ends with its event, through
// the outbox); its progress is written only while its holder's claim stands.
import type { Db, Filter } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import { through, isDuplicateKey } from '#core/infra/mongo.js';
import type { ChangeTarget } from '../../events/index.js';
import { VersionedCollection, type VersionedDocument } from '../../../shared/infra/versioned-collection.js';

export const CONNECTION_SYNCS = 'connection_syncs';
/** When a sync that waits for something other than time is due. */
export const NEVER = new Date('9999-12-31T00:00:00Z');

export type SyncStatus = 'IDLE' | 'RUNNING' | 'FAILED';

export interface SyncRun {
  holder: string;
  until: Date;
  startedAt: Date;
  /** The next page's URL; null before the first. */
  next: string | null;
  added: number;
  updated: number;
  skipped: number;
  /** Records skipped because they are another patient's. */
  foreignPatient?: number;
  /**
   * The next sync's `_lastUpdated=ge…` once this one finishes: the FHIR server's clock when this run read its first
   * page, less 5 minutes, never later than Portico's own clock then. Null until that page was read.
   */
  highWater: string | null;
  /** How many times the run was taken over since it last stored anything (its replica died). */
  takeovers?: number;
  /**
   * The run's steps, decided at its start (plan.ts): `Patient`, a type (`Condition`), or a type with a registration's
   * search (`Observation?category=laboratory`).
   */
  plan?: string[];
  /** The step being read (its index in `plan`); `next` is a page of it. */
  step?: number;
  /** This run's tallies by type. */
  types?: Record<string, TypeRun>;
  /** By step: the next run's `_lastUpdated=ge…` for it (highWater's rule, per search). */
  marks?: Record<string, string>;
  /** The resources of referenced types the records read so far point at (`Type/id`, at most 1,000). */
  references?: string[];
  /**
   * A full run (`POST /connections/{id}/sync {"full": true}`): every step reads from its first page (no mark), and a
   * type read whole loses its stored records that this run did not write (what the server no longer returns).
   */
  full?: boolean;
}

/** A run's tallies for one type. */
export interface TypeRun {
  added: number;
  updated: number;
  /** Skipped as invalid. */
  invalid: number;
  foreignPatient: number;
  /** Removed by a full run: stored, and no longer returned by the server. */
  removed?: number;
  /** SKIPPED: the server refused its search (httpStatus). */
  status?: 'SKIPPED' | 'FAILED';
  httpStatus?: number;
}

/** Where a type stands after the last finished run (docs/api.md, `sync.types`). */
export interface TypeState {
  /** Its records the syncs have added in all. */
  count: number;
  status: 'SYNCED' | 'SKIPPED' | 'FAILED';
  httpStatus?: number;
  /** In the last run: skipped as invalid, and as another patient's. */
  invalid: number;
  foreignPatient: number;
}

export interface SyncState {
  connectionId: string;
  accountId: string;
  appUserId: string;
  brandId: string;
  status: SyncStatus;
  lastSyncedAt: Date | null;
  lastError: string | null;
  /** Observations the syncs have added in all. */
  observations: number;
  /** Records the last finished sync skipped as invalid. */
  lastSkipped?: number;
  /** Records the last finished sync skipped as another patient's. */
  lastForeignPatient?: number;
  highWater: string | null;
  /** By search (a run's step): its high-water mark. */
  marks?: Record<string, string>;
  /** By type, where it stands after the last finished run. */
  types?: Record<string, TypeState>;
  nextAt: Date;
  /** When the last run began: `POST /connections/{id}/sync` waits 60 s after it. */
  lastStartedAt?: Date | null;
  /** A full run was asked for (the next run is one; it clears this when it begins). */
  fullRequested?: boolean;
  /** Set while its app or account is suspended: not synced until reactivated (resumeAccount). */
  pausedAt?: Date | null;
  run: SyncRun | null;
  version: number;
}

interface SyncDocument extends VersionedDocument, Omit<SyncState, 'connectionId' | 'version'> {}

export interface SyncFinish {
  status: 'IDLE' | 'FAILED';
  lastSkipped: number;
  lastForeignPatient: number;
  lastError: string | null;
  lastSyncedAt?: Date;
  highWater: string | null;
  marks?: Record<string, string>;
  types?: Record<string, TypeState>;
  addObservations: number;
  nextAt: Date;
  /** A full run failed: the next run is one. */
  fullRequested?: boolean;
}

/**
 * What the sync, its worker and its schedule, the connections' lifecycle and admin use of connection_syncs:
 * SyncRepository, and FakeSyncStore for unit tests (test/api/features/connections/sync/store.test.ts holds both to
 * the same behaviour).
 */
export interface SyncStore {
  /** Where a change to the sync is recorded (the outbox's target): its one document, at `version`. */
  target(connectionId: string, version: number): ChangeTarget;
  /** A connection's sync, due at `now`; an existing one (a reconnect) is made due then. */
  schedule(state: Pick<SyncState, 'connectionId' | 'accountId' | 'appUserId' | 'brandId'>, now: Date): Promise<void>;
  /** The sync as it stands; null when there is none or it was removed. */
  get(connectionId: string): Promise<SyncState | null>;
  /** Syncs due at `now` and not running, or running under a claim that lapsed (its replica died), soonest first. */
  due(now: Date, limit: number): Promise<SyncState[]>;
  /** Claims a run (a new one, or the lapsed one it holds, taken over where it stopped); the state after, or null. */
  claim(state: SyncState, holder: string, now: Date, until: Date): Promise<SyncState | null>;
  /**
   * Ends `holder`'s run without a sync (its app or account is suspended) until resumed (`full`: it was a full run, so
   * the next is one); false when it is not its.
   */
  pause(connectionId: string, holder: string, at: Date, full?: boolean): Promise<boolean>;
  /** A paused sync is due now again (its app or account is active). */
  resume(connectionId: string, now: Date): Promise<void>;
  /** The account or one of its apps is active again: its paused syncs are due now (and pause again if still not). */
  resumeAccount(accountId: string, now: Date): Promise<void>;
  /** Records a run's progress and extends its claim; false when the claim was lost. */
  progress(connectionId: string, run: SyncRun): Promise<boolean>;
  /** Ends the run `holder` holds, at `version`, with the outbox's change id; the state after, or null. */
  finish(
    connectionId: string,
    version: number,
    finish: SyncFinish,
    at: Date,
    changeId: string,
  ): Promise<SyncState | null>;
  /** Makes a sync due now (on demand; `full`: the next run is a full one); the state after, or null when there is none. */
  requestNow(connectionId: string, now: Date, full?: boolean): Promise<SyncState | null>;
  /** The connection is gone: so is its sync. */
  remove(connectionId: string, at: Date): Promise<void>;
}

export class SyncRepository implements SyncStore {
  private readonly documents: VersionedCollection<SyncDocument>;

  constructor(db: Db, locks: DocumentLocks) {
    this.documents = new VersionedCollection(db.collection<SyncDocument>(CONNECTION_SYNCS), locks);
  }

  async init(indexes?: Db): Promise<void> {
    await through(this.documents.collection, indexes).createIndex({ nextAt: 1 });
    // Reactivating an account or app resumes its paused syncs (resumeAccount).
    await through(this.documents.collection, indexes).createIndex({ accountId: 1 });
  }

  target(connectionId: string, version: number): ChangeTarget {
    return { collection: CONNECTION_SYNCS, id: connectionId, version };
  }

  async schedule(
    state: Pick<SyncState, 'connectionId' | 'accountId' | 'appUserId' | 'brandId'>,
    now: Date,
  ): Promise<void> {
    const { connectionId, ...rest } = state;
    try {
      await this.documents.insert({
        _id: connectionId,
        _version: 1,
        ...rest,
        ...firstSync(now),
      });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      await this.documents.update(connectionId, 'any', { set: { nextAt: now } }, now);
    }
  }

  async get(connectionId: string): Promise<SyncState | null> {
    const doc = await this.documents.find(connectionId);
    return doc && doc.deletedAt === null ? toState(doc) : null;
  }

  async due(now: Date, limit: number): Promise<SyncState[]> {
    const filter: Filter<SyncDocument> = {
      deletedAt: null,
      $or: [{ run: null, nextAt: { $lte: now } }, { 'run.until': { $lt: now } }],
    };
    const docs = await this.documents.collection.find(filter).sort({ nextAt: 1 }).limit(limit).toArray();
    return docs.map((doc) => toState(doc as SyncDocument));
  }

  async claim(state: SyncState, holder: string, now: Date, until: Date): Promise<SyncState | null> {
    const run = claimedRun(state, holder, now, until);
    // The version read, and no run whose holder is still at it (progress extends a claim without a new version).
    const free: Filter<SyncDocument> = {
      _version: state.version,
      $or: [{ run: null }, { 'run.until': { $lt: now } }],
    };
    const set = {
      status: 'RUNNING' as const,
      run,
      ...(!state.run && { lastStartedAt: now, ...(state.fullRequested && { fullRequested: false }) }),
    };
    const doc = await this.documents.updateWhere(state.connectionId, free, { set }, now);
    return doc && toState(doc);
  }

  async pause(connectionId: string, holder: string, at: Date, full = false): Promise<boolean> {
    const doc = await this.documents.updateWhere(
      connectionId,
      { 'run.holder': holder },
      { set: { status: 'IDLE', run: null, nextAt: NEVER, pausedAt: at, ...(full && { fullRequested: true }) } },
      at,
    );
    return doc !== null;
  }

  async resume(connectionId: string, now: Date): Promise<void> {
    await this.documents.updateWhere(
      connectionId,
      { pausedAt: { $ne: null } },
      { set: { pausedAt: null, nextAt: now } },
      now,
    );
  }

  async resumeAccount(accountId: string, now: Date): Promise<void> {
    const paused = await this.documents.collection
      .find({ accountId, pausedAt: { $ne: null }, deletedAt: null }, { projection: { _id: 1 } })
      .toArray();
    for (const { _id } of paused) await this.resume(_id, now);
  }

  progress(connectionId: string, run: SyncRun): Promise<boolean> {
    return this.documents.modify(connectionId, { 'run.holder': run.holder }, { $set: { run } }, { cached: false });
  }

  async finish(
    connectionId: string,
    version: number,
    finish: SyncFinish,
    at: Date,
    changeId: string,
  ): Promise<SyncState | null> {
    const { addObservations, ...set } = finish;
    const doc = await this.documents.update(
      connectionId,
      version,
      { set: { ...set, run: null }, inc: { observations: addObservations } },
      at,
      changeId,
    );
    return doc && toState(doc);
  }

  async requestNow(connectionId: string, now: Date, full = false): Promise<SyncState | null> {
    const doc = await this.documents.update(
      connectionId,
      'any',
      { set: { nextAt: now, ...(full && { fullRequested: true }) } },
      now,
    );
    return doc && toState(doc);
  }

  async remove(connectionId: string, at: Date): Promise<void> {
    await this.documents.softDelete(connectionId, 'any', at);
  }
}

/** What a sync holds when it is first scheduled, due at `now`, besides its connection's ids. */
export function firstSync(now: Date) {
  return {
    status: 'IDLE' as const,
    lastSyncedAt: null,
    lastError: null,
    observations: 0,
    highWater: null,
    nextAt: now,
    run: null,
    updatedAt: now,
    deletedAt: null,
  };
}

/** The run a claim writes: the one read, taken over where it stopped (one more takeover), or a new one. */
export function claimedRun(state: SyncState, holder: string, now: Date, until: Date): SyncRun {
  return state.run
    ? { ...state.run, holder, until, takeovers: (state.run.takeovers ?? 0) + 1 }
    : {
        holder,
        until,
        startedAt: now,
        next: null,
        added: 0,
        updated: 0,
        skipped: 0,
        foreignPatient: 0,
        highWater: null,
        takeovers: 0,
        ...(state.fullRequested && { full: true }),
      };
}

function toState(doc: SyncDocument): SyncState {
  const { _id, _version, _changes, deletedAt: _deleted, updatedAt: _updated, ...rest } = doc;
  return { connectionId: _id, version: _version, ...rest };
}
