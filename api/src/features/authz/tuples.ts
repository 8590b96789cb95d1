// Relation tuples (object#relation@subject), grouped per (tenant, object, relation) in one document whose
// _id names all three: every check step is one primary-key read, and no query can leave its tenant.
import type { Collection, Db } from 'mongodb';
import type { SharedCache } from '../../shared/infra/cache.js';
import type { DocumentLocks } from '#core/infra/locks.js';
import { through } from '#core/infra/mongo.js';

export interface Tuple {
  object: string; // "patient:<id>"
  relation: string; // "tenant"
  subject: string; // "customer_account:<id>" or a userset "customer_account:<id>#member"
}

interface RelationDocument {
  _id: string;
  tenantId: string;
  object: string;
  relation: string;
  subjects: string[];
}

const relationId = (tenantId: string, object: string, relation: string) => `${tenantId}|${object}#${relation}`;

/** The relation tuples the authorization check reads; TupleRepository (MongoDB) and FakeTupleStore (tests). */
export interface TupleStore {
  write(tenantId: string, tuple: Tuple): Promise<void>;
  delete(tenantId: string, tuple: Tuple): Promise<void>;
  /** The subjects holding `relation` on `object` inside the tenant; `fresh` reads past any cache. */
  subjects(tenantId: string, object: string, relation: string, fresh?: boolean): Promise<string[]>;
}

export class TupleRepository implements TupleStore {
  private readonly collection: Collection<RelationDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
    private readonly cache?: SharedCache<string[]>,
  ) {
    this.collection = db.collection<RelationDocument>('authz_relations');
  }

  /** `indexes`: the database handle index builds go through (they can take long). */
  async init(indexes?: Db): Promise<void> {
    await through(this.collection, indexes).createIndex({ tenantId: 1, object: 1 });
  }

  async write(tenantId: string, tuple: Tuple): Promise<void> {
    const id = relationId(tenantId, tuple.object, tuple.relation);
    await this.locks.withLock(`authz_relations:${id}`, () =>
      this.collection.updateOne(
        { _id: id },
        {
          $setOnInsert: { tenantId, object: tuple.object, relation: tuple.relation },
          $addToSet: { subjects: tuple.subject },
        },
        { upsert: true },
      ),
    );
    this.cache?.invalidate(id);
  }

  async delete(tenantId: string, tuple: Tuple): Promise<void> {
    const id = relationId(tenantId, tuple.object, tuple.relation);
    await this.locks.withLock(`authz_relations:${id}`, () =>
      this.collection.updateOne({ _id: id }, { $pull: { subjects: tuple.subject } }),
    );
    this.cache?.invalidate(id);
  }

  /** The subjects holding `relation` on `object` inside the tenant; `fresh` reads past the cache. */
  async subjects(tenantId: string, object: string, relation: string, fresh = false): Promise<string[]> {
    const id = relationId(tenantId, object, relation);
    const load = async () =>
      (await this.collection.findOne({ _id: id }, { projection: { subjects: 1 } }))?.subjects ?? [];
    if (fresh) return load();
    // Only non-empty sets are cached: "no tuple yet" must not outlive the write that adds one.
    return (await (this.cache ? this.cache.getOrLoad(id, load, (subjects) => subjects.length > 0) : load())) ?? [];
  }
}
