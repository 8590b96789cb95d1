// AppStore's behaviour, held the same for the MongoDB repository (on the embedded database, with the cache the API
// gives it) and for the in-memory fake (docs/architecture.md, "Stores and fakes").
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { CacheHub } from '../../../../api/src/shared/infra/cache.js';
import { FakeAppStore } from '../../../../api/src/features/apps/fake-store.js';
import { AppRepository, type App, type AppStore } from '../../../../api/src/features/apps/store.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

const T0 = new Date('2026-11-20T10:00:00.000Z');
const T1 = new Date('2026-11-21T10:00:00.000Z');
const T2 = new Date('2026-11-22T10:00:00.000Z');

function app(overrides: Partial<App> = {}): App {
  return {
    id: randomUUID(),
    accountId: randomUUID(),
    name: 'Vitals',
    grants: {
      resourceTypes: ['Observation'],
      loincCodes: ['*'],
      confidentiality: ['N'],
      sensitivity: [],
      lookbackDays: null,
    },
    status: 'ACTIVE',
    redirectUris: [],
    createdAt: T0,
    updatedAt: T0,
    version: 1,
    ...overrides,
  };
}

describeStore<AppStore>(
  'apps: app stores',
  {
    mongo: {
      name: 'AppRepository (MongoDB, cached)',
      open: async ({ db, locks }) => {
        const caches = await CacheHub.create();
        const repository = new AppRepository(db, locks, caches.cache('apps', { max: 100, ttlMs: 60_000 }));
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakeAppStore', open: async () => new FakeAppStore() },
  },
  ({ store, it }) => {
    it('reads an app back, cached or as stored, and nothing for an unknown id', async () => {
      const stored = app();
      await store().insert(stored);
      expect(await store().get(stored.id)).to.deep.equal(stored);
      expect(await store().find(stored.id)).to.deep.equal(stored);
      expect(await store().get(randomUUID())).to.equal(null);
      expect(await store().find(randomUUID())).to.equal(null);
    });

    it('refuses an id that exists (duplicate key), keeping the first app', async () => {
      const stored = app();
      await store().insert(stored);
      const error = await store()
        .insert({ ...stored, name: 'Other' })
        .catch((e: unknown) => e);
      expect(error).to.have.property('code', 11000);
      expect(await store().find(stored.id)).to.deep.equal(stored);
    });

    it('applies changes whatever the version, bumping it: every read after sees them (a cached one too)', async () => {
      const stored = app();
      await store().insert(stored);
      expect(await store().get(stored.id)).to.include({ status: 'ACTIVE' }); // cached now
      const suspended = await store().update(stored.id, { status: 'SUSPENDED' }, T1);
      expect(suspended).to.deep.equal({ ...stored, status: 'SUSPENDED', updatedAt: T1, version: 2 });
      const grants = { ...stored.grants, loincCodes: ['8867-4'], lookbackDays: 30 };
      const regranted = await store().update(stored.id, { grants }, T2);
      expect(regranted).to.deep.equal({ ...stored, status: 'SUSPENDED', grants, updatedAt: T2, version: 3 });
      expect(await store().get(stored.id)).to.deep.equal(regranted);
      expect(await store().find(stored.id)).to.deep.equal(regranted);
    });

    it("lists an account's apps alone, newest first (ties by id), page after page", async () => {
      const accountId = randomUUID();
      const apps = [T0, T1, T1, T2].map((createdAt) => app({ accountId, createdAt, updatedAt: createdAt }));
      for (const a of apps) await store().insert(a);
      await store().insert(app()); // another account's
      const expected = [...apps].sort(
        (a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1),
      );
      const first = await store().listByAccount(accountId, 3);
      expect(first.items.map((a) => a.id)).to.deep.equal(expected.slice(0, 3).map((a) => a.id));
      expect(first.hasMore).to.equal(true);
      const last = first.items[2]!;
      const second = await store().listByAccount(accountId, 3, { createdAt: last.createdAt, id: last.id });
      expect(second).to.deep.equal({ items: [expected[3]], hasMore: false });
    });

    it('changes nothing for an unknown app', async () => {
      expect(await store().update(randomUUID(), { status: 'SUSPENDED' }, T1)).to.equal(null);
    });
  },
);
