// apps: a customer account's client applications and the grants their install holds (used by the
// observation gateway).
import type { Collection, Db } from 'mongodb';
import type { DocumentLocks } from '../../../core/src/infra/locks.js';

export interface AppGrants {
  resourceTypes: string[];
  loincCodes: string[];
  confidentiality: string[];
  sensitivity: string[];
  lookbackDays: number | null;
}

export interface App {
  id: string;
  accountId: string;
  name: string;
  grants: AppGrants;
  status: 'ACTIVE' | 'SUSPENDED';
  createdAt: Date;
  updatedAt: Date;
  version: number;
}

type AppDocument = Omit<App, 'id' | 'version'> & { _id: string; _version: number };

export class AppRepository {
  private readonly collection: Collection<AppDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
  ) {
    this.collection = db.collection<AppDocument>('apps');
  }

  async init(): Promise<void> {
    await this.collection.createIndex({ accountId: 1 });
  }

  async insert(app: App): Promise<void> {
    const { id, version, ...rest } = app;
    await this.collection.insertOne({ _id: id, _version: version, ...rest });
  }

  async get(id: string): Promise<App | null> {
    const doc = await this.collection.findOne({ _id: id });
    return doc && toApp(doc);
  }

  async update(id: string, changes: Partial<Pick<App, 'status' | 'grants'>>, at: Date): Promise<App | null> {
    const doc = await this.locks.withLock(`apps:${id}`, () =>
      this.collection.findOneAndUpdate({ _id: id }, { $set: { ...changes, updatedAt: at }, $inc: { _version: 1 } }, { returnDocument: 'after' }),
    );
    return doc && toApp(doc);
  }
}

function toApp(doc: AppDocument): App {
  const { _id, _version, ...rest } = doc;
  return { id: _id, version: _version, ...rest };
}
