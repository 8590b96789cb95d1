// ApiKeyStore's behaviour, held the same for the MongoDB repository (on the embedded database, with the cache the
// API gives it, which also remembers unknown hashes) and for the in-memory fake (docs/architecture.md, "Stores and
// fakes"). A key is found by the hash of its value; a revocation is once, and every read after it sees it.
import { expect } from 'chai';
import { createHash, randomUUID } from 'node:crypto';
import { CacheHub } from '../../../../api/src/shared/infra/cache.js';
import { FakeApiKeyStore } from '../../../../api/src/features/credentials/fake-store.js';
import {
  ApiKeyRepository,
  type ApiKeyRecord,
  type ApiKeyStore,
} from '../../../../api/src/features/credentials/store.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

const T0 = new Date('2026-11-20T10:00:00.000Z');
const T1 = new Date('2026-11-21T10:00:00.000Z');

const hashOf = (value: string) => createHash('sha256').update(value).digest('hex');

function key(overrides: Partial<ApiKeyRecord> = {}): { hash: string; record: ApiKeyRecord } {
  const record: ApiKeyRecord = {
    keyId: randomUUID(),
    kind: 'sk',
    accountId: randomUUID(),
    appId: null,
    name: 'ci',
    scopes: ['patients:write'],
    createdAt: T0,
    revokedAt: null,
    ...overrides,
  };
  return { hash: hashOf(`sk_${randomUUID()}`), record };
}

describeStore<ApiKeyStore>(
  'credentials: API key stores',
  {
    mongo: {
      name: 'ApiKeyRepository (MongoDB, cached with misses)',
      open: async ({ db, locks }) => {
        const caches = await CacheHub.create();
        const repository = new ApiKeyRepository(
          db,
          locks,
          caches.cache('api-keys', { max: 100, ttlMs: 60_000, missTtlMs: 60_000 }),
        );
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakeApiKeyStore', open: async () => new FakeApiKeyStore() },
  },
  ({ store, it }) => {
    it('finds a key by its hash, also one looked for before it existed; nothing for another hash', async () => {
      const { hash, record } = key({ kind: 'ak', appId: randomUUID() });
      expect(await store().findByHash(hash)).to.equal(null); // remembered as unknown now
      await store().insert(hash, record);
      expect(await store().findByHash(hash)).to.deep.equal(record);
      expect(await store().findByHash(hashOf('another key'))).to.equal(null);
    });

    it('refuses a hash or a key id that exists (duplicate key)', async () => {
      const { hash, record } = key();
      await store().insert(hash, record);
      const sameHash = await store()
        .insert(hash, { ...record, keyId: randomUUID() })
        .catch((e: unknown) => e);
      expect(sameHash).to.have.property('code', 11000);
      const other = key({ keyId: record.keyId });
      const sameKeyId = await store()
        .insert(other.hash, other.record)
        .catch((e: unknown) => e);
      expect(sameKeyId).to.have.property('code', 11000);
      expect(await store().findByHash(other.hash)).to.equal(null);
      expect(await store().findByHash(hash)).to.deep.equal(record);
    });

    it('revokes a live key once, answered as it was; every read after sees it revoked (cached too)', async () => {
      const { hash, record } = key();
      await store().insert(hash, record);
      expect(await store().findByHash(hash)).to.deep.equal(record); // cached now
      expect(await store().revoke(record.keyId, T1)).to.deep.equal(record);
      expect(await store().findByHash(hash)).to.deep.equal({ ...record, revokedAt: T1 });
      expect(await store().revoke(record.keyId, T1), 'already revoked').to.equal(null);
      expect(await store().findByHash(hash)).to.deep.equal({ ...record, revokedAt: T1 });
    });

    it("lists an account's keys alone, revoked ones too, newest first (ties by key id), page after page", async () => {
      const accountId = randomUUID();
      const keys = [T0, T1, T1].map((createdAt) => key({ accountId, createdAt }));
      for (const k of keys) await store().insert(k.hash, k.record);
      await store().insert(key().hash, key().record); // another account's
      await store().revoke(keys[0]!.record.keyId, T1);
      const expected = keys
        .map((k) => k.record)
        .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.keyId < b.keyId ? 1 : -1));
      const first = await store().listByAccount(accountId, 2);
      expect(first.items.map((k) => k.keyId)).to.deep.equal(expected.slice(0, 2).map((k) => k.keyId));
      expect(first.hasMore).to.equal(true);
      const last = first.items[1]!;
      const second = await store().listByAccount(accountId, 2, { createdAt: last.createdAt, id: last.keyId });
      expect(second.items).to.deep.equal([{ ...expected[2], revokedAt: T1 }]);
      expect(second.hasMore).to.equal(false);
    });

    it('revokes nothing for an unknown key id, and only the key named', async () => {
      const { hash, record } = key();
      const sibling = key({ accountId: record.accountId });
      await store().insert(hash, record);
      await store().insert(sibling.hash, sibling.record);
      expect(await store().revoke(randomUUID(), T1)).to.equal(null);
      expect(await store().revoke(record.keyId, T1)).to.deep.equal(record);
      expect(await store().findByHash(sibling.hash)).to.deep.equal(sibling.record);
    });
  },
);
