// customer_accounts: the tenants. Each carries its usage counters so that quotas are enforced by one
// conditional update (no count-then-insert race), written through VersionedCollection like every other
// change to an account.
import type { Db } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import type { SharedCache } from '../../shared/infra/cache.js';
import { VersionedCollection } from '../../shared/infra/versioned-collection.js';
import { keysetPage, type KeysetPage, type KeysetPosition } from '../../shared/infra/keyset.js';

export interface CustomerAccount {
  id: string;
  name: string;
  status: 'ACTIVE' | 'SUSPENDED';
  createdAt: Date;
}

export type Quota = 'webhookEndpoints';

/** What services need of accounts; CustomerAccountRepository (MongoDB) and FakeAccountStore (tests). */
export interface AccountStore {
  insert(account: CustomerAccount): Promise<void>;
  /** May come from a cache. */
  get(id: string): Promise<CustomerAccount | null>;
  /** What get would answer from the cache now; undefined when it is not cached. */
  cached?(id: string): CustomerAccount | null | undefined;
  /** As stored now, never from the cache: for background work that must see a reactivation at once. */
  find(id: string): Promise<CustomerAccount | null>;
  /** Takes one unit of a quota; false when the account is already at `max` (or does not exist). */
  reserve(id: string, quota: Quota, max: number): Promise<boolean>;
  /** Gives one unit back (never below zero). */
  release(id: string, quota: Quota): Promise<void>;
  /** Suspends or reactivates the account; the account after, or null when there is none. */
  setStatus(id: string, status: CustomerAccount['status'], at: Date): Promise<CustomerAccount | null>;
  /** Every account, newest first, a page after `after` (the admin list). */
  list(limit: number, after?: KeysetPosition): Promise<KeysetPage<CustomerAccount>>;
}

interface AccountDocument {
  _id: string;
  _version: number;
  name: string;
  status: 'ACTIVE' | 'SUSPENDED';
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
  usage: Record<Quota, number>;
}

export class CustomerAccountRepository implements AccountStore {
  private readonly documents: VersionedCollection<AccountDocument>;

  constructor(
    db: Db,
    locks: DocumentLocks,
    private readonly cache?: SharedCache<CustomerAccount>,
  ) {
    this.documents = new VersionedCollection(db.collection<AccountDocument>('customer_accounts'), locks, (id) =>
      cache?.invalidate(id),
    );
  }

  async init(_indexes?: Db): Promise<void> {}

  async insert(account: CustomerAccount): Promise<void> {
    await this.documents.insert({
      _id: account.id,
      _version: 1,
      name: account.name,
      status: account.status,
      createdAt: account.createdAt,
      updatedAt: account.createdAt,
      deletedAt: null,
      usage: { webhookEndpoints: 0 },
    });
  }

  cached(id: string): CustomerAccount | null | undefined {
    return this.cache?.peek(id);
  }

  async get(id: string): Promise<CustomerAccount | null> {
    return this.cache ? this.cache.getOrLoad(id, () => this.find(id)) : this.find(id);
  }

  async find(id: string): Promise<CustomerAccount | null> {
    const doc = await this.documents.find(id);
    return doc && { id: doc._id, name: doc.name, status: doc.status, createdAt: doc.createdAt };
  }

  async setStatus(id: string, status: CustomerAccount['status'], at: Date): Promise<CustomerAccount | null> {
    // The versioned write invalidates the cached account here and, over Redis, on every replica.
    const doc = await this.documents.update(id, 'any', { set: { status } }, at);
    return doc && { id: doc._id, name: doc.name, status: doc.status, createdAt: doc.createdAt };
  }

  async list(limit: number, after?: KeysetPosition): Promise<KeysetPage<CustomerAccount>> {
    const page = await keysetPage(this.documents.collection, {}, '_id', limit, after);
    return {
      items: page.items.map((doc) => ({ id: doc._id, name: doc.name, status: doc.status, createdAt: doc.createdAt })),
      hasMore: page.hasMore,
    };
  }

  reserve(id: string, quota: Quota, max: number): Promise<boolean> {
    // Usage is not in the cached account, so taking quota leaves the cache alone.
    return this.documents.modify(
      id,
      { [`usage.${quota}`]: { $lt: max } },
      { $inc: { [`usage.${quota}`]: 1 } },
      { cached: false },
    );
  }

  async release(id: string, quota: Quota): Promise<void> {
    await this.documents.modify(
      id,
      { [`usage.${quota}`]: { $gt: 0 } },
      { $inc: { [`usage.${quota}`]: -1 } },
      { cached: false },
    );
  }
}
