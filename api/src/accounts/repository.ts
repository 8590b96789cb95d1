// customer_accounts: the tenants. Each carries its usage counters so that quotas are enforced by one
// conditional update (no count-then-insert race).
import type { Collection, Db } from 'mongodb';
import type { SharedCache } from '../infra/cache.js';
import type { DocumentLocks } from '../../../core/src/infra/locks.js';

export interface CustomerAccount {
  id: string;
  name: string;
  status: 'ACTIVE' | 'SUSPENDED';
  createdAt: Date;
}

interface AccountDocument {
  _id: string;
  name: string;
  status: 'ACTIVE' | 'SUSPENDED';
  createdAt: Date;
  usage: { webhookEndpoints: number };
}

export type Quota = keyof AccountDocument['usage'];

export class CustomerAccountRepository {
  private readonly collection: Collection<AccountDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
    private readonly cache?: SharedCache<CustomerAccount>,
  ) {
    this.collection = db.collection<AccountDocument>('customer_accounts');
  }

  async init(): Promise<void> {}

  async insert(account: CustomerAccount): Promise<void> {
    await this.collection.insertOne({ _id: account.id, name: account.name, status: account.status, createdAt: account.createdAt, usage: { webhookEndpoints: 0 } });
  }

  async get(id: string): Promise<CustomerAccount | null> {
    const load = async () => {
      const doc = await this.collection.findOne({ _id: id }, { projection: { usage: 0 } });
      return doc && { id: doc._id, name: doc.name, status: doc.status, createdAt: doc.createdAt };
    };
    return this.cache ? this.cache.getOrLoad(id, load) : load();
  }

  /** Takes one unit of a quota; false when the account is already at `max`. */
  async reserve(id: string, quota: Quota, max: number): Promise<boolean> {
    const result = await this.locks.withLock(`customer_accounts:${id}`, () =>
      this.collection.updateOne({ _id: id, [`usage.${quota}`]: { $lt: max } }, { $inc: { [`usage.${quota}`]: 1 } }),
    );
    return result.modifiedCount === 1;
  }

  async release(id: string, quota: Quota): Promise<void> {
    await this.locks.withLock(`customer_accounts:${id}`, () =>
      this.collection.updateOne({ _id: id, [`usage.${quota}`]: { $gt: 0 } }, { $inc: { [`usage.${quota}`]: -1 } }),
    );
  }
}
