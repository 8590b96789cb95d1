// observations: one document per ingested resource, _id "<connection>/<Observation.id>", with the search
// fields derived at ingest (sdk/observations/document.ts). Ingest upserts a bundle's resources by id;
// firstIngestedAt is set only on insert, so a paging walk that began earlier never sees a later arrival.
import type { Collection, Db, Filter, Sort } from 'mongodb';
import { BEGINNING } from './dates.js';
import { markPlainWrite } from '../infra/change-scope.js';
import type { NormalizedObservation } from './observations.js';
import type { ObservationDocument } from '../sdk/observations/document.js';
import { through } from '../../../core/src/infra/mongo.js';

export interface IngestTarget {
  accountId: string;
  connectionId: string;
}

/** What ingest and the gateway need of storage. */
export interface ObservationStore {
  /** Upserts every observation by id within the connection: how many were new and how many replaced. */
  upsert(target: IngestTarget, observations: NormalizedObservation[], at: Date): Promise<{ ingested: number; updated: number }>;
  /** One page of what `filter` matches after the keyset position `after`, in `sort` order, and how many match `filter` in all. */
  page(filter: Filter<ObservationDocument>, after: Filter<ObservationDocument> | undefined, sort: Sort, limit: number): Promise<{ items: ObservationDocument[]; total: number }>;
  /** Every observation of the connection (what the gateway's index is built from); not a snapshot: one replaced meanwhile may come twice. */
  all(connectionId: string): AsyncIterable<ObservationDocument>;
}

export class ObservationRepository implements ObservationStore {
  private readonly collection: Collection<ObservationDocument>;
  /**
   * The same collection with the deadline of long operations (core/src/infra/mongo.ts): for a bundle's bulk
   * writes (up to 1000 resources in one command) and whole-connection reads. The calls before them (the
   * connection, the app user) have the request deadline, so a database that is already down answers 503 at once.
   */
  private readonly longCollection: Collection<ObservationDocument>;

  constructor(db: Db, longDb: Db = db) {
    this.collection = db.collection<ObservationDocument>('observations');
    this.longCollection = longDb.collection<ObservationDocument>('observations');
  }

  /** `indexes`: the database handle index builds go through (they can take long). */
  async init(indexes?: Db): Promise<void> {
    // Serves the gateway on MongoDB: the connection's observations in date order, both ways.
    await through(this.collection, indexes).createIndex({ connectionId: 1, sortDate: 1, _id: 1 });
  }

  async upsert({ accountId, connectionId }: IngestTarget, observations: NormalizedObservation[], at: Date): Promise<{ ingested: number; updated: number }> {
    if (observations.length === 0) return { ingested: 0, updated: 0 };
    // Inside an idempotent request the first observation is its recovery point (infra/change-scope.ts); a
    // re-run after a crash that wrote only others is harmless all the same: the upsert repeats.
    const mark = await markPlainWrite('observations', `${connectionId}/${observations[0]!.resourceId}`);
    const fields = (o: NormalizedObservation) => ({ ...mark, connectionId, accountId, resourceId: o.resourceId, code: o.code, category: o.category, date: o.date, sortDate: o.date?.start ?? BEGINNING, confidentiality: o.confidentiality, sensitivity: o.sensitivity, resource: o.resource, updatedAt: at });
    const idOf = (o: NormalizedObservation) => `${connectionId}/${o.resourceId}`;
    // Most of a bundle is new: one unordered insert of everything, then the ids that exist are replaced
    // (their firstIngestedAt kept). A unique _id decides, so two ingests racing on one id never duplicate it.
    let existing = new Set<string>();
    try {
      await this.longCollection.insertMany(observations.map((o) => ({ _id: idOf(o), ...fields(o), firstIngestedAt: at })), { ordered: false });
    } catch (error) {
      const failures = (error as { writeErrors?: { code: number; index: number }[] | { code: number; index: number } }).writeErrors;
      const list = failures === undefined ? [] : Array.isArray(failures) ? failures : [failures];
      if (list.length === 0 || list.some((e) => e.code !== 11000)) throw error;
      existing = new Set(list.map((e) => idOf(observations[e.index]!)));
    }
    if (existing.size > 0) {
      // updateMany, though an _id matches at most one document: the embedded database (FerretDB 1.x on
      // SQLite) keeps the SQLite connection of a single-document update's lookup open until the whole
      // command ends, so one command of more than ~100 updateOne statements on existing documents held its
      // 100-connection pool and waited forever for one more, locking the database for every request
      // (docs/operations.md). An updateMany statement reads its lookup to the end, which
      // releases the connection at once. On MongoDB the two are the same write.
      await this.longCollection.bulkWrite(
        observations.filter((o) => existing.has(idOf(o))).map((o) => ({ updateMany: { filter: { _id: idOf(o) }, update: { $set: fields(o), $setOnInsert: { firstIngestedAt: at } }, upsert: true } })),
        { ordered: false },
      );
    }
    return { ingested: observations.length - existing.size, updated: existing.size };
  }

  async page(filter: Filter<ObservationDocument>, after: Filter<ObservationDocument> | undefined, sort: Sort, limit: number): Promise<{ items: ObservationDocument[]; total: number }> {
    const pageFilter = after ? { $and: [filter, after] } : filter;
    const [items, total] = await Promise.all([this.collection.find(pageFilter).sort(sort).limit(limit).toArray(), this.collection.countDocuments(filter)]);
    return { items, total };
  }

  all(connectionId: string): AsyncIterable<ObservationDocument> {
    return this.longCollection.find({ connectionId }).sort({ connectionId: 1, sortDate: 1, _id: 1 });
  }
}
