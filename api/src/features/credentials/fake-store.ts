// In-memory ApiKeyStore for unit tests of the admin service and of authentication;
// test/api/features/credentials/store.test.ts holds it and ApiKeyRepository to the same behaviour.
import type { ApiKeyRecord, ApiKeyStore } from './store.js';
import { DuplicateKeyError } from '../../shared/infra/memory-versioned.js';
import { keysetSlice, type KeysetPage, type KeysetPosition } from '../../shared/infra/keyset.js';

export class FakeApiKeyStore implements ApiKeyStore {
  private readonly byHash = new Map<string, ApiKeyRecord>();

  async insert(hash: string, record: ApiKeyRecord): Promise<void> {
    if (this.byHash.has(hash) || [...this.byHash.values()].some((r) => r.keyId === record.keyId))
      throw new DuplicateKeyError(hash);
    this.byHash.set(hash, structuredClone(record));
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | null> {
    const record = this.byHash.get(hash);
    return record ? structuredClone(record) : null;
  }

  async listByAccount(accountId: string, limit: number, after?: KeysetPosition): Promise<KeysetPage<ApiKeyRecord>> {
    const mine = [...this.byHash.values()].filter((record) => record.accountId === accountId);
    const page = keysetSlice(mine, (record) => ({ createdAt: record.createdAt, id: record.keyId }), limit, after);
    return { items: page.items.map((record) => structuredClone(record)), hasMore: page.hasMore };
  }

  async revoke(keyId: string, at: Date): Promise<ApiKeyRecord | null> {
    const record = [...this.byHash.values()].find((r) => r.keyId === keyId && r.revokedAt === null);
    if (!record) return null;
    const before = structuredClone(record);
    record.revokedAt = at;
    return before;
  }
}
