// observations: one document per ingested resource, _id "<connection>/<Observation.id>", with the search
// fields derived at ingest (features/clinical/records/document.ts); firstIngestedAt is set when a resource is first
// written, so a paging walk that began earlier never sees a later arrival.
//
// A bundle is written all or nothing (docs/operations.md, "Clinical ingest"), under a generation of its own
// that its connection's head commits in one write (bundle-heads.ts): bundle-writer.ts writes and commits it, and
// bundle-applier.ts applies the resources it replaces in place, after the answer. Until they are applied, readers
// here lay its record over what they read: a read of the whole connection does so itself; a search of the database
// cannot, so it waits for the applier (or applies them when their applier stopped).
import type { Logger } from 'pino';
import type { Collection, Db, Filter, Sort } from 'mongodb';
import type { Clock } from '#core/clock.js';
import { systemClock } from '#core/clock.js';
import { outsideChangeScope } from '../../../shared/infra/change-scope.js';
import type { NormalizedObservation } from '../ingest/observations.js';
import { recordKey, type ObservationDocument } from './document.js';
import { removeStale } from './removals.js';
import { through } from '#core/infra/mongo.js';
import { BundleHeads } from './bundle-heads.js';
import { ABANDONED_LISTED_MS, KEPT_MS, type Visibility } from './head-document.js';
import { BundleApplier } from './bundle-applier.js';
import {
  BUNDLES,
  movedOn,
  recordObservations,
  storedFields,
  type BundleRecord,
  type StoredFields,
} from './bundle-records.js';
import { BundleWriter } from './bundle-writer.js';
import type { DocumentLocks } from '#core/infra/locks.js';
import { CheckpointStore, type Checkpoint } from './checkpoints.js';
import { RecordLog, type Changes } from './record-log.js';

export interface IngestTarget {
  accountId: string;
  connectionId: string;
}

/** What ingest and the gateway need of storage. */
export interface RecordStore {
  /** Upserts every observation by id within the connection, all or nothing: how many were new and how many replaced. */
  upsert(
    target: IngestTarget,
    observations: NormalizedObservation[],
    at: Date,
  ): Promise<{ ingested: number; updated: number }>;
  /**
   * Removes the connection's records of `types` last written before `before` (what a full sync's complete passes of
   * them did not write: document.ts, `removed`), in bundles of up to 1,000 stamped `at`: how many, by type.
   */
  removeStale(
    target: IngestTarget,
    types: readonly string[],
    before: Date,
    at: Date,
    /** After each bundle of removals is committed: how many of each type it removed. */
    onRemoved?: (counts: Map<string, number>) => Promise<void>,
  ): Promise<Map<string, number>>;
  /** One page of what `filter` matches after the keyset position `after`, in `sort` order, and how many match `filter`
   * in all. */
  page(
    connectionId: string,
    filter: Filter<ObservationDocument>,
    after: Filter<ObservationDocument> | undefined,
    sort: Sort,
    limit: number,
  ): Promise<{ items: ObservationDocument[]; total: number }>;
  /**
   * Every observation of the connection as its last commit left it (what the gateway's index is built from), in
   * no particular order. One may come twice: its later copy is the one shown, with its first copy's firstIngestedAt.
   */
  all(connectionId: string): AsyncIterable<ObservationDocument>;
  /**
   * What the bundles committed after generation `after` wrote, in commit order, up to the last commit
   * (record-log.ts); null when one of them is no longer recorded (build from the checkpoint, or all()).
   */
  changes(connectionId: string, after: number): Promise<Changes | null>;
  /** The connection's latest checkpoint (checkpoints.ts); null when it has none. */
  checkpoint(connectionId: string): Promise<Checkpoint | null>;
  /** Brings the connection's checkpoint up to its last commit: after a read of all(), so the next one is not needed. */
  writeCheckpoint(connectionId: string): Promise<void>;
}

/** Reads of the database that a search gives up after, when bundles keep being committed under it. */
const PAGE_ATTEMPTS = 3;

export class RecordRepository implements RecordStore {
  private readonly collection: Collection<ObservationDocument>;
  /**
   * The same collection with the deadline of long operations (core/src/infra/mongo.ts): for a bundle's bulk
   * writes (up to 1000 resources in one command) and whole-connection reads. The calls before them (the
   * connection, the app user) have the request deadline, so a database that is already down answers 503 at once.
   */
  private readonly longCollection: Collection<ObservationDocument>;
  private readonly records: Collection<BundleRecord>;
  readonly heads: BundleHeads;
  private readonly writer: BundleWriter;
  /** Applies committed bundles' replacements in place, after the answer. */
  readonly applier: BundleApplier;
  private readonly log: RecordLog;
  /** The work after commits under way here. */
  private readonly background = new Set<Promise<void>>();

  constructor(
    db: Db,
    /** The per-document locks of the head's conditional writes (bundle-heads.ts). */
    locks: DocumentLocks,
    longDb: Db = db,
    private readonly clock: Clock = systemClock,
    /** Where work after a commit that failed is logged (it is done again later: by the next bundle, or a reader). */
    private readonly logger?: Pick<Logger, 'warn'>,
    /** A checkpoint's largest text (checkpoints.ts): the gateway's index budget for one connection. */
    checkpointMaxBytes = 32 * 1024 * 1024,
  ) {
    this.collection = db.collection<ObservationDocument>('observations');
    this.longCollection = longDb.collection<ObservationDocument>('observations');
    this.records = longDb.collection<BundleRecord>(BUNDLES);
    this.heads = new BundleHeads(longDb, locks);
    this.writer = new BundleWriter(this.heads, this.records, this.longCollection, clock);
    this.applier = new BundleApplier(this.heads, this.records, this.longCollection, clock);
    this.log = new RecordLog(
      this.heads,
      this.records,
      new CheckpointStore(longDb, locks),
      (connectionId) => this.all(connectionId),
      checkpointMaxBytes,
    );
  }

  /** `indexes`: the database handle index builds go through (they can take long). */
  async init(indexes?: Db): Promise<void> {
    // Serves the gateway on MongoDB: the connection's observations in date order, both ways.
    await through(this.collection, indexes).createIndex({ connectionId: 1, sortDate: 1, _id: 1 });
  }

  async upsert(
    target: IngestTarget,
    observations: NormalizedObservation[],
    at: Date,
  ): Promise<{ ingested: number; updated: number }> {
    if (observations.length === 0) return { ingested: 0, updated: 0 };
    const stored = observations.map((o) => storedFields(target, o, at));
    const { replaced, revived } = (await this.write(target.connectionId, stored, at))!;
    return { ingested: observations.length - replaced + revived, updated: replaced - revived };
  }

  removeStale(
    target: IngestTarget,
    types: readonly string[],
    before: Date,
    at: Date,
    onRemoved?: (counts: Map<string, number>) => Promise<void>,
  ): Promise<Map<string, number>> {
    return removeStale(
      {
        collection: this.longCollection,
        applied: (connectionId) => this.applier.applied(connectionId),
        write: (connectionId, stored, select) => this.write(connectionId, stored, at, select),
      },
      { target, types, before, at },
      onRemoved,
    );
  }

  /**
   * Writes and commits a bundle of records' fields (`select`: BundleWriter.write's); then, after the answer, applies
   * its replacements. Null when `select` left nothing to write.
   */
  private async write(
    connectionId: string,
    stored: StoredFields[],
    at: Date,
    select?: (stored: StoredFields[], renew: () => Promise<void>) => Promise<StoredFields[]>,
  ) {
    const result = await this.writer.write(connectionId, stored, at, select);
    if (!result) return null;
    const { gen, replaced, replacing } = result;
    this.afterCommit(connectionId, async () => {
      // This bundle's replacements, and those of any bundle whose applier stopped.
      if (replaced > 0 || (await this.heads.visibility(connectionId)).pending.length > 0)
        await this.applier.applyPending(connectionId, new Map([[gen, replacing]]));
      await this.tidy(connectionId);
    });
    return result;
  }

  async page(
    connectionId: string,
    filter: Filter<ObservationDocument>,
    after: Filter<ObservationDocument> | undefined,
    sort: Sort,
    limit: number,
  ): Promise<{ items: ObservationDocument[]; total: number }> {
    for (let attempt = 0; attempt < PAGE_ATTEMPTS; attempt++) {
      // A database query cannot lay a record over what it reads: pending bundles are applied first (by their
      // applier, or here when it stopped).
      const before = await this.applier.applied(connectionId);
      const visible = {
        $and: [
          filter,
          { removed: { $ne: true } },
          { seq: { $not: { $gt: before.committed }, ...(before.abandoned.length > 0 && { $nin: before.abandoned }) } },
        ],
      } as Filter<ObservationDocument>;
      const pageFilter = after ? { $and: [visible, after] } : visible;
      const [items, total] = await Promise.all([
        this.collection.find(pageFilter).sort(sort).limit(limit).toArray(),
        this.collection.countDocuments(visible),
      ]);
      // A bundle that replaced observations while they were read may show in part: read again.
      if (!replacedSince(await this.heads.visibility(connectionId), before.committed)) return { items, total };
    }
    throw movedOn();
  }

  async *all(connectionId: string): AsyncIterable<ObservationDocument> {
    const before = await this.heads.visibility(connectionId);
    // When each document read was first written (also those not shown): what a record laid over keeps.
    const firstWritten = new Map<string, Date>();
    for await (const doc of this.longCollection.find({ connectionId }).sort({ connectionId: 1, sortDate: 1, _id: 1 })) {
      const seq = doc.seq ?? 0;
      if (before.abandoned.includes(seq)) continue;
      firstWritten.set(doc._id, doc.firstIngestedAt);
      if (seq <= before.committed) yield doc; // later ones come whole from their records, below
    }
    const after = await this.heads.visibility(connectionId);
    if (after.pending.length > 0) this.afterCommit(connectionId, () => this.applier.applyPending(connectionId)); // its applier may have stopped
    // The bundles being applied when the read began, and every bundle committed while it went on, in the order
    // they were committed: the read may have met any part of them.
    const gens = [
      ...new Set([
        ...before.pending.map((p) => p.gen),
        ...[...after.pending, ...after.kept].map((g) => g.gen).filter((gen) => gen > before.committed),
      ]),
    ].sort((a, b) => a - b);
    for (const gen of gens) {
      const record = await this.records.findOne({ _id: `${connectionId}/${gen}` });
      if (!record) throw movedOn(); // applied and forgotten while this read went on (it took longer than KEPT_MS)
      for (const fields of recordObservations(record)) {
        const _id = recordKey(connectionId, fields.resourceType, fields.resourceId);
        // One the read did not meet (a replacement moved it in the index order) is looked up.
        const first =
          firstWritten.get(_id) ??
          (await this.longCollection.findOne({ _id }, { projection: { firstIngestedAt: 1, seq: 1 } }))
            ?.firstIngestedAt ??
          record.at;
        firstWritten.set(_id, first);
        yield { ...fields, _id, firstIngestedAt: first };
      }
    }
  }

  changes(connectionId: string, after: number): Promise<Changes | null> {
    return this.log.changes(connectionId, after);
  }

  checkpoint(connectionId: string): Promise<Checkpoint | null> {
    return this.log.checkpoint(connectionId);
  }

  writeCheckpoint(connectionId: string): Promise<void> {
    return this.log.write(connectionId);
  }

  /**
   * The connection's observations as readers see them, one each (all() without its repeats and tombstones): for tests
   * and tools.
   */
  async current(connectionId: string): Promise<ObservationDocument[]> {
    const byId = new Map<string, ObservationDocument>();
    for await (const doc of this.all(connectionId))
      byId.set(doc._id, { ...doc, firstIngestedAt: byId.get(doc._id)?.firstIngestedAt ?? doc.firstIngestedAt });
    return [...byId.values()].filter((doc) => !doc.removed);
  }

  /** Resolves once the work after every commit made here so far is done (or has failed). */
  async settled(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
  }

  /**
   * Runs `work` in the background, after a commit (the request has its answer) or a read; a failure leaves it
   * to the next bundle or reader. (Two appliers of one connection do not both apply: the head's lease decides.)
   */
  private afterCommit(connectionId: string, work: () => Promise<void>): void {
    outsideChangeScope(() => {
      const running = work()
        .catch((error: unknown) => this.backgroundFailed(error, connectionId))
        .finally(() => this.background.delete(running));
      this.background.add(running);
    });
  }

  /**
   * Deletes the records of bundles applied long enough ago that no reader that began before can need them, and
   * stops listing generations abandoned long ago. After each commit, and for every connection now and then
   * (tidyAll), so the last bundles of a connection that gets no more are tidied too.
   */
  async tidy(connectionId: string): Promise<void> {
    let head = await this.heads.head(connectionId);
    const now = this.clock.now().getTime();
    // The checkpoint first: the records it stands for are forgotten here (a failure keeps them for the next round).
    if (head && (await this.log.due(head, now))) {
      await this.log.write(connectionId);
      head = await this.heads.head(connectionId);
    }
    const kept = (head?.kept ?? []).filter((k) => k.at.getTime() <= now - KEPT_MS).map((k) => k.gen);
    const abandoned = (head?.abandoned ?? [])
      .filter((a) => a.cleaned && a.at.getTime() <= now - ABANDONED_LISTED_MS)
      .map((a) => a.gen);
    if (kept.length === 0 && abandoned.length === 0) return;
    for (const gen of kept) await this.records.deleteOne({ _id: `${connectionId}/${gen}` });
    await this.heads.forget(connectionId, kept, abandoned);
  }

  /** tidy() for every connection that lists kept or abandoned generations; a failure is left for the next round. */
  async tidyAll(): Promise<void> {
    for (const head of await this.heads.listing())
      await this.tidy(head._id).catch((error: unknown) => this.backgroundFailed(error, head._id));
  }

  private backgroundFailed(error: unknown, connectionId: string): void {
    this.logger?.warn(
      { err: error, connectionId },
      'applying a committed bundle failed; the next bundle or search of the connection applies it',
    );
  }
}

/** Whether a bundle committed after generation `committed` has replaced observations (it may be applied in part). */
function replacedSince(visibility: Visibility, committed: number): boolean {
  return [...visibility.pending, ...visibility.kept.filter((k) => k.replaced)].some((g) => g.gen > committed);
}
