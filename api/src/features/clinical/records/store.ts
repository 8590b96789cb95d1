// observations: one document per ingested resource, _id "<connection>/<Observation.id>", with the search
// fields derived at ingest (features/clinical/records/document.ts); firstIngestedAt is set when a resource is first
// written, so a paging walk that began earlier never sees a later arrival.
//
// A bundle is written all or nothing (docs/operations.md, "Clinical ingest"), under a generation of its own
// that its connection's head commits in one write (bundle-heads.ts):
//   1. its record, the whole bundle as it will be stored, goes into observation_bundles (`<connection>/<gen>`);
//   2. its new resources are inserted, marked with the generation (`seq`): readers skip a document first written
//      by a generation not yet committed, or by one that never will be;
//   3. the commit: from here readers see the bundle whole. Resources it replaces are laid over what readers
//      read from its record while they are
//   4. applied in place, after the answer, by one applier at a time per connection in the order the bundles
//      were committed (the head's applier lease). The head lists a bundle as pending until then; when its
//      applier stopped (its server did), the next bundle of the connection, a search of the database, or the
//      next build of a gateway index takes the lease over and applies it from the record.
// Every step writes inserts, or changes one document by _id alone: the embedded database (FerretDB on SQLite)
// reads the whole collection for any other filter, even _id with one more condition (200 such updates took
// 30 s beside 3,000 documents, against 0.5 s by _id alone), so a bundle costs about the same whatever it replaces.
import { randomUUID } from 'node:crypto';
import type { Collection, Db, Filter, Sort } from 'mongodb';
import type { Clock } from '#core/clock.js';
import { systemClock } from '#core/clock.js';
import { outsideChangeScope } from '../../../shared/infra/change-scope.js';
import type { NormalizedObservation } from '../ingest/observations.js';
import type { ObservationDocument } from './document.js';
import { through, isDuplicateKey } from '#core/infra/mongo.js';
import { BundleHeads } from './bundle-heads.js';
import { ABANDONED_LISTED_MS, KEPT_MS, type Visibility, type WriterLease } from './head-document.js';
import {
  BUNDLES,
  insertRecord,
  interrupted,
  lostLease,
  movedOn,
  packObservations,
  recordObservations,
  type BundleRecord,
  storedFields,
  type StoredFields,
} from './bundle-records.js';
import type { DocumentLocks } from '#core/infra/locks.js';
import { CheckpointStore, type Checkpoint } from './checkpoints.js';
import { ObservationLog, type Changes } from './observation-log.js';

export interface IngestTarget {
  accountId: string;
  connectionId: string;
}

/** What ingest and the gateway need of storage. */
export interface ObservationStore {
  /** Upserts every observation by id within the connection, all or nothing: how many were new and how many replaced. */
  upsert(
    target: IngestTarget,
    observations: NormalizedObservation[],
    at: Date,
  ): Promise<{ ingested: number; updated: number }>;
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
   * (observation-log.ts); null when one of them is no longer recorded (build from the checkpoint, or all()).
   */
  changes(connectionId: string, after: number): Promise<Changes | null>;
  /** The connection's latest checkpoint (checkpoints.ts); null when it has none. */
  checkpoint(connectionId: string): Promise<Checkpoint | null>;
  /** Brings the connection's checkpoint up to its last commit: after a read of all(), so the next one is not needed. */
  writeCheckpoint(connectionId: string): Promise<void>;
}

/** Reads of the database that a search gives up after, when bundles keep being committed under it. */
const PAGE_ATTEMPTS = 3;
/** How long a search of the database waits for pending bundles to be applied before it answers 503. */
const WAIT_FOR_APPLY_MS = 4_000;
/** Replacements per write (the applier's lease is renewed before each). */
const APPLY_BATCH = 100;
/** Point reads at once when an abandoned generation's leftovers are looked for. */
const READS_AT_ONCE = 16;

export class ObservationRepository implements ObservationStore {
  private readonly collection: Collection<ObservationDocument>;
  /**
   * The same collection with the deadline of long operations (core/src/infra/mongo.ts): for a bundle's bulk
   * writes (up to 1000 resources in one command) and whole-connection reads. The calls before them (the
   * connection, the app user) have the request deadline, so a database that is already down answers 503 at once.
   */
  private readonly longCollection: Collection<ObservationDocument>;
  private readonly records: Collection<BundleRecord>;
  readonly heads: BundleHeads;
  private readonly log: ObservationLog;
  /** The work after commits under way here. */
  private readonly background = new Set<Promise<void>>();

  constructor(
    db: Db,
    /** The per-document locks of the head's conditional writes (bundle-heads.ts). */
    locks: DocumentLocks,
    longDb: Db = db,
    private readonly clock: Clock = systemClock,
    /** Told of work after a commit that failed (it is done again later: by the next bundle, or a reader). */
    private readonly onBackgroundError: (error: unknown, connectionId: string) => void = () => {},
    /** A checkpoint's largest text (checkpoints.ts): the gateway's index budget for one connection. */
    checkpointMaxBytes = 32 * 1024 * 1024,
  ) {
    this.collection = db.collection<ObservationDocument>('observations');
    this.longCollection = longDb.collection<ObservationDocument>('observations');
    this.records = longDb.collection<BundleRecord>(BUNDLES);
    this.heads = new BundleHeads(longDb, locks);
    this.log = new ObservationLog(
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
    { accountId, connectionId }: IngestTarget,
    observations: NormalizedObservation[],
    at: Date,
  ): Promise<{ ingested: number; updated: number }> {
    if (observations.length === 0) return { ingested: 0, updated: 0 };
    const lease = await this.heads.acquire(connectionId, () => this.clock.now());
    const { gen } = lease;
    const idOf = (resourceId: string) => `${connectionId}/${resourceId}`;
    const stored = observations.map((o) => storedFields({ accountId, connectionId }, o, at));
    let committed = false;
    try {
      await this.removeLeftovers(lease);
      await this.renewed(lease);
      await insertRecord(this.records, {
        _id: `${connectionId}/${gen}`,
        connectionId,
        gen,
        at,
        observations: packObservations(stored),
      });
      await this.renewed(lease);
      // Most of a bundle is usually new: one unordered insert of everything; the ids that exist fail it, and a
      // unique _id decides, so two ingests racing on one id never duplicate it.
      const existing = await this.insertNew(
        stored.map((fields) => ({ _id: idOf(fields.resourceId), ...fields, seq: gen, rev: gen, firstIngestedAt: at })),
      );
      // Leftovers of a generation that never committed are not there for readers: this bundle writes them anew.
      // (Read by _id, then written by _id alone: see the top of this file. No other writer is at work on them.)
      if (existing.size > 0 && lease.abandoned.length > 0) {
        const leftovers = new Set(await this.marked(lease, [...existing], lease.abandoned));
        const again = stored.filter((fields) => leftovers.has(idOf(fields.resourceId)));
        if (again.length > 0) {
          await this.renewed(lease);
          // seq only moves forward: a write of this bundle that lands late, after another took its lease over and
          // wrote the same leftover, does not hide what that one committed.
          await this.longCollection.bulkWrite(
            again.map((fields) => ({
              updateMany: {
                filter: { _id: idOf(fields.resourceId) },
                update: { $set: { ...fields, rev: gen, firstIngestedAt: at }, $max: { seq: gen } },
              },
            })),
            { ordered: false },
          );
        }
        for (const id of leftovers) existing.delete(id);
      }
      const replaced = existing.size;
      committed = await this.heads.commit(lease, replaced > 0, at);
      if (!committed) throw lostLease();
      const replacing = stored.filter((fields) => existing.has(idOf(fields.resourceId)));
      this.afterCommit(connectionId, async () => {
        // This bundle's replacements, and those of any bundle whose applier stopped.
        if (replaced > 0 || (await this.heads.visibility(connectionId)).pending.length > 0)
          await this.applyPending(connectionId, new Map([[gen, replacing]]));
        await this.tidy(connectionId);
      });
      return { ingested: observations.length - replaced, updated: replaced };
    } catch (error) {
      // A duplicate _id that escapes is a write that landed twice around an interruption, not the client's
      // conflict: nothing is committed, and the bundle can be sent again.
      throw isDuplicateKey(error) ? interrupted() : error;
    } finally {
      if (!committed) await this.heads.release(lease).catch(() => this.heads.releaseWhenAnswering(lease));
    }
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
      const before = await this.applied(connectionId);
      const visible = {
        $and: [
          filter,
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
    if (after.pending.length > 0) this.afterCommit(connectionId, () => this.applyPending(connectionId)); // its applier may have stopped
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
        const _id = `${connectionId}/${fields.resourceId}`;
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

  /** The connection's observations as readers see them, one each (all() without its repeats): for tests and tools. */
  async current(connectionId: string): Promise<ObservationDocument[]> {
    const byId = new Map<string, ObservationDocument>();
    for await (const doc of this.all(connectionId))
      byId.set(doc._id, { ...doc, firstIngestedAt: byId.get(doc._id)?.firstIngestedAt ?? doc.firstIngestedAt });
    return [...byId.values()];
  }

  /** Resolves once the work after every commit made here so far is done (or has failed). */
  async settled(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
  }

  /** Inserts the documents that are new; the _ids of those that exist. */
  private async insertNew(docs: ObservationDocument[]): Promise<Set<string>> {
    try {
      await this.longCollection.insertMany(docs, { ordered: false });
      return new Set();
    } catch (error) {
      const failures = (error as { writeErrors?: { code: number; index: number }[] | { code: number; index: number } })
        .writeErrors;
      const list = failures === undefined ? [] : Array.isArray(failures) ? failures : [failures];
      // Anything but duplicates (or duplicates without saying which) is an interrupted write: retry the bundle.
      if (list.length === 0 || list.some((e) => !isDuplicateKey(e)))
        throw isDuplicateKey(error) ? interrupted() : error;
      return new Set(list.map((e) => docs[e.index]!._id));
    }
  }

  private async renewed(lease: WriterLease): Promise<void> {
    if (!(await this.heads.renew(lease, this.clock.now()))) throw lostLease();
  }

  /**
   * Applies the connection's pending bundles in place, in the order they were committed, under the head's
   * applier lease (returns at once when another process holds it: that one goes on to the end of the list).
   * `known`: replacements already known by generation (the writer's own); others come from their records.
   */
  private async applyPending(connectionId: string, known = new Map<number, StoredFields[]>()): Promise<void> {
    const token = randomUUID();
    for (;;) {
      if (!(await this.heads.takeApplier(connectionId, token, this.clock.now()))) return;
      try {
        for (;;) {
          const next = (await this.heads.visibility(connectionId)).pending.reduce<number | undefined>(
            (first, p) => (first === undefined || p.gen < first ? p.gen : first),
            undefined,
          );
          if (next === undefined) break;
          const record = known.has(next) ? undefined : await this.records.findOne({ _id: `${connectionId}/${next}` });
          const replacing = known.get(next) ?? (record && recordObservations(record));
          if (!replacing) throw new Error(`the record of pending bundle ${connectionId}/${next} is missing`);
          for (let from = 0; from < replacing.length; from += APPLY_BATCH) {
            if (!(await this.heads.renewApplier(connectionId, token, this.clock.now()))) return;
            await this.replace(connectionId, next, replacing.slice(from, from + APPLY_BATCH));
          }
          await this.heads.applied(connectionId, next, this.clock.now());
        }
      } finally {
        await this.heads.releaseApplier(connectionId, token).catch(() => undefined);
      }
      // A bundle committed while the lease was given back may have found it held: look once more.
      if ((await this.heads.visibility(connectionId)).pending.length === 0) return;
    }
  }

  /**
   * One batch of a bundle's replacements (a test holds it to stop an applier part-way). updateMany, though an
   * _id matches at most one document: the embedded database (FerretDB 1.x on SQLite) keeps the SQLite connection
   * of a single-document update's lookup open until the whole command ends, so one command of more than ~100
   * updateOne statements on existing documents held its 100-connection pool and waited forever for one more,
   * locking the database for every request (docs/operations.md). An updateMany statement reads its lookup to the
   * end, which releases the connection at once. On MongoDB the two are the same write.
   */
  private async replace(connectionId: string, gen: number, batch: StoredFields[]): Promise<void> {
    await this.longCollection.bulkWrite(
      batch.map((fields) => ({
        updateMany: {
          filter: { _id: `${connectionId}/${fields.resourceId}` },
          update: { $set: { ...fields, rev: gen } },
        },
      })),
      { ordered: false },
    );
  }

  /**
   * The connection's head once no bundle is pending: applies them when their applier stopped, else waits for it
   * up to WAIT_FOR_APPLY_MS (then 503).
   */
  private async applied(connectionId: string): Promise<Visibility> {
    const waitUntil = performance.now() + WAIT_FOR_APPLY_MS;
    for (let pause = 20; ; pause = Math.min(pause * 2, 250)) {
      const visibility = await this.heads.visibility(connectionId);
      if (visibility.pending.length === 0) return visibility;
      await this.applyPending(connectionId);
      if (performance.now() + pause > waitUntil) throw movedOn();
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /**
   * Deletes what a generation that never committed wrote, once no writer of it can still be at work: the new
   * observations its record lists that still carry its mark (a later bundle may have written them anew). Under
   * the writer's lease, so no bundle writes them meanwhile.
   */
  private async removeLeftovers(lease: WriterLease): Promise<void> {
    const { connectionId } = lease;
    const head = await this.heads.head(connectionId);
    const old = this.clock.now().getTime() - KEPT_MS;
    const expired = (head?.abandoned ?? []).filter((a) => !a.cleaned && a.at.getTime() <= old).map((a) => a.gen);
    if (expired.length === 0) return;
    for (const gen of expired) {
      const record = await this.records.findOne({ _id: `${connectionId}/${gen}` });
      if (!record) continue; // it died before its record, so before anything else
      const marked = await this.marked(
        lease,
        recordObservations(record).map((fields) => `${connectionId}/${fields.resourceId}`),
        [gen],
      );
      await this.renewed(lease);
      if (marked.length > 0)
        await this.longCollection.bulkWrite(
          marked.map((_id) => ({ deleteMany: { filter: { _id } } })),
          { ordered: false },
        );
      await this.records.deleteOne({ _id: record._id });
    }
    await this.heads.cleaned(connectionId, expired);
  }

  /** Which of the documents `ids` were first written by one of `gens`: read by _id, a few at once. */
  private async marked(lease: WriterLease, ids: string[], gens: number[]): Promise<string[]> {
    const marked: string[] = [];
    for (let from = 0; from < ids.length; from += READS_AT_ONCE) {
      if (from % (READS_AT_ONCE * 16) === 0) await this.renewed(lease);
      const docs = await Promise.all(
        ids
          .slice(from, from + READS_AT_ONCE)
          .map((_id) => this.longCollection.findOne({ _id }, { projection: { seq: 1 } })),
      );
      for (const doc of docs) if (doc && doc.seq !== undefined && gens.includes(doc.seq)) marked.push(doc._id);
    }
    return marked;
  }

  /**
   * Runs `work` in the background, after a commit (the request has its answer) or a read; a failure leaves it
   * to the next bundle or reader. (Two appliers of one connection do not both apply: the head's lease decides.)
   */
  private afterCommit(connectionId: string, work: () => Promise<void>): void {
    outsideChangeScope(() => {
      const running = work()
        .catch((error: unknown) => this.onBackgroundError(error, connectionId))
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
      await this.tidy(head._id).catch((error: unknown) => this.onBackgroundError(error, head._id));
  }
}

/** Whether a bundle committed after generation `committed` has replaced observations (it may be applied in part). */
function replacedSince(visibility: Visibility, committed: number): boolean {
  return [...visibility.pending, ...visibility.kept.filter((k) => k.replaced)].some((g) => g.gen > committed);
}
