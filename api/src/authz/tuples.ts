// Relation tuples (object#relation@subject), grouped per (tenant, object, relation) in one document whose
// _id names all three: every check step is one primary-key read, and no query can leave its tenant.
import type { Collection, Db } from 'mongodb';

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

export class TupleRepository {
  private readonly collection: Collection<RelationDocument>;

  constructor(db: Db) {
    this.collection = db.collection<RelationDocument>('authz_relations');
  }

  async init(): Promise<void> {
    await this.collection.createIndex({ tenantId: 1, object: 1 });
  }

  async write(tenantId: string, tuple: Tuple): Promise<void> {
    await this.collection.updateOne(
      { _id: relationId(tenantId, tuple.object, tuple.relation) },
      { $setOnInsert: { tenantId, object: tuple.object, relation: tuple.relation }, $addToSet: { subjects: tuple.subject } },
      { upsert: true },
    );
  }

  async delete(tenantId: string, tuple: Tuple): Promise<void> {
    await this.collection.updateOne({ _id: relationId(tenantId, tuple.object, tuple.relation) }, { $pull: { subjects: tuple.subject } });
  }

  /** The subjects holding `relation` on `object` inside the tenant. */
  async subjects(tenantId: string, object: string, relation: string): Promise<string[]> {
    const doc = await this.collection.findOne({ _id: relationId(tenantId, object, relation) }, { projection: { subjects: 1 } });
    return doc?.subjects ?? [];
  }
}
