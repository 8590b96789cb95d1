// apps: a customer account's client applications and the grants their install holds (used by the
// observation gateway, and by every request made with an app's keys: a suspended app's are refused). Reads
// come through a replicated cache; changes go through VersionedCollection, which invalidates it.
import type { Db } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import type { SharedCache } from '../../shared/infra/cache.js';
import { VersionedCollection } from '../../shared/infra/versioned-collection.js';
import { through } from '#core/infra/mongo.js';
import { keysetPage, type KeysetPage, type KeysetPosition } from '../../shared/infra/keyset.js';

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
  /** Where a connect session may send the patient back (docs/connecting.md); none on apps made before them. */
  redirectUris: string[];
  createdAt: Date;
  updatedAt: Date;
  version: number;
}

export type AppChanges = Partial<Pick<App, 'status' | 'grants' | 'redirectUris'>>;

/** What services need of apps; AppRepository (MongoDB) and FakeAppStore (tests). */
export interface AppStore {
  insert(app: App): Promise<void>;
  /** May come from a cache (what authenticating a key asks). */
  get(id: string): Promise<App | null>;
  /** What get would answer from the cache now; undefined when it is not cached. */
  cached?(id: string): App | null | undefined;
  /**
   * As stored now, never from the cache: for reads that must see a change as soon as its generation token
   * moves (the gateway's checks), which the cache's invalidation, sent over pub/sub, may reach later.
   */
  find(id: string): Promise<App | null>;
  /** Applies the changes whatever the current version; null when there is no such app. */
  update(id: string, changes: AppChanges, at: Date): Promise<App | null>;
  /** The account's apps, newest first, a page after `after` (the admin list). */
  listByAccount(accountId: string, limit: number, after?: KeysetPosition): Promise<KeysetPage<App>>;
}

type AppDocument = Omit<App, 'id' | 'version'> & {
  _id: string;
  _version: number;
  deletedAt: Date | null;
  _changes?: Record<string, string>;
};

export class AppRepository implements AppStore {
  private readonly documents: VersionedCollection<AppDocument>;

  constructor(
    db: Db,
    locks: DocumentLocks,
    private readonly cache?: SharedCache<App>,
  ) {
    this.documents = new VersionedCollection(db.collection<AppDocument>('apps'), locks, (id) => cache?.invalidate(id));
  }

  /** `indexes`: the database handle index builds go through (they can take long). */
  async init(indexes?: Db): Promise<void> {
    await through(this.documents.collection, indexes).createIndex({ accountId: 1 });
  }

  async insert(app: App): Promise<void> {
    const { id, version, ...rest } = app;
    await this.documents.insert({ _id: id, _version: version, ...rest, deletedAt: null });
  }

  cached(id: string): App | null | undefined {
    return this.cache?.peek(id);
  }

  async get(id: string): Promise<App | null> {
    return this.cache ? this.cache.getOrLoad(id, () => this.find(id)) : this.find(id);
  }

  async find(id: string): Promise<App | null> {
    const doc = await this.documents.find(id);
    return doc && toApp(doc);
  }

  async update(id: string, changes: AppChanges, at: Date): Promise<App | null> {
    const doc = await this.documents.update(id, 'any', { set: changes }, at);
    return doc && toApp(doc);
  }

  async listByAccount(accountId: string, limit: number, after?: KeysetPosition): Promise<KeysetPage<App>> {
    const page = await keysetPage(this.documents.collection, { accountId, deletedAt: null }, '_id', limit, after);
    return { items: page.items.map(toApp), hasMore: page.hasMore };
  }
}

function toApp(doc: AppDocument): App {
  const { _id, _version, _changes, deletedAt: _deletedAt, ...rest } = doc;
  return { id: _id, version: _version, ...rest, redirectUris: rest.redirectUris ?? [] };
}
