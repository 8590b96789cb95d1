// api_keys: one document per key, _id is the key's SHA-256 so that authenticating is a primary-key read.
import type { Collection, Db } from 'mongodb';
import type { SharedCache } from '../../shared/infra/cache.js';
import type { DocumentLocks } from '#core/infra/locks.js';
import type { ApiKeyRecord } from '../../shared/http/keys.js';
import { updateOneWhere } from '#core/infra/where.js';
import { markPlainWrite } from '../../shared/infra/change-scope.js';
import { through } from '#core/infra/mongo.js';
import { keysetPage, type KeysetPage, type KeysetPosition } from '../../shared/infra/keyset.js';

export type { ApiKeyRecord };

/** What services need of keys; ApiKeyRepository (MongoDB) and FakeApiKeyStore (tests). */
export interface ApiKeyStore {
  /** Stores a key under the SHA-256 of its value. */
  insert(hash: string, record: ApiKeyRecord): Promise<void>;
  /** The key's record (revoked or not) by hash; may come from a cache. */
  findByHash(hash: string): Promise<ApiKeyRecord | null>;
  /** What findByHash would answer from the cache now (null: a key it knows to be unknown); undefined when not cached. */
  cachedByHash?(hash: string): ApiKeyRecord | null | undefined;
  /** Marks the key revoked; returns it as it was, or null when there is no such live key. */
  revoke(keyId: string, at: Date): Promise<ApiKeyRecord | null>;
  /** The account's keys (its own and its apps'), revoked ones too, newest first, a page after `after`. */
  listByAccount(accountId: string, limit: number, after?: KeysetPosition): Promise<KeysetPage<ApiKeyRecord>>;
}

type ApiKeyDocument = ApiKeyRecord & { _id: string; _changeId?: string; _revokedBy?: string };

export class ApiKeyRepository implements ApiKeyStore {
  private readonly collection: Collection<ApiKeyDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
    private readonly cache?: SharedCache<ApiKeyRecord>,
  ) {
    this.collection = db.collection<ApiKeyDocument>('api_keys');
  }

  /** `indexes`: the database handle index builds go through (they can take long). */
  async init(indexes?: Db): Promise<void> {
    await through(this.collection, indexes).createIndex({ keyId: 1 }, { unique: true });
  }

  async insert(hash: string, record: ApiKeyRecord): Promise<void> {
    // Inside an idempotent request, the insert is its recovery point (shared/infra/change-scope.ts).
    await this.collection.insertOne({ _id: hash, ...record, ...(await markPlainWrite('api_keys', hash)) });
    // Its hash may be remembered as unknown (KEY_MISS_TTL_MS); only a guess could have put it there, but forget it.
    this.cache?.invalidate(hash);
  }

  async listByAccount(accountId: string, limit: number, after?: KeysetPosition): Promise<KeysetPage<ApiKeyRecord>> {
    // Ordered by keyId after the time, never by the hash (_id), which a cursor would then carry.
    const page = await keysetPage(this.collection, { accountId }, 'keyId', limit, after);
    return { items: page.items.map(toRecord), hasMore: page.hasMore };
  }

  cachedByHash(hash: string): ApiKeyRecord | null | undefined {
    return this.cache?.peek(hash);
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | null> {
    const load = async () => {
      const doc = await this.collection.findOne({ _id: hash });
      return doc && toRecord(doc);
    };
    return this.cache ? this.cache.getOrLoad(hash, load) : load();
  }

  /** Marks the key revoked; returns it as it was, or null when there is no such live key. */
  async revoke(keyId: string, at: Date): Promise<ApiKeyRecord | null> {
    // The key's _id (its hash) first: the revocation records it as the request's recovery point.
    const live = await this.collection.findOne({ keyId, revokedAt: null });
    if (!live) return null;
    const mark = await markPlainWrite('api_keys', live._id, '_revokedBy');
    const revoked = await updateOneWhere(
      this.collection,
      this.locks,
      live._id,
      { revokedAt: null },
      { $set: { revokedAt: at, ...mark } },
    );
    this.cache?.invalidate(live._id);
    return revoked && toRecord(live);
  }
}

function toRecord(doc: ApiKeyDocument): ApiKeyRecord {
  return {
    keyId: doc.keyId,
    kind: doc.kind,
    accountId: doc.accountId,
    appId: doc.appId ?? null,
    name: doc.name ?? null,
    scopes: doc.scopes,
    createdAt: doc.createdAt,
    revokedAt: doc.revokedAt ?? null,
  };
}
