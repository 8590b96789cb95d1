// WebhookEndpointStore's behaviour, held the same for the MongoDB repository (on the real embedded
// database, with its cached live lists) and for the in-memory fake the service's unit tests use.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { CacheHub } from '../../../../api/src/shared/infra/cache.js';
import { FakeWebhookEndpointStore } from '../../../../api/src/features/webhooks/fake-store.js';
import { WebhookEndpointRepository, type WebhookEndpoint, type WebhookEndpointStore } from '../../../../api/src/features/webhooks/store.js';
import { withTestDatabase, type TestDatabase } from '../../../../testkit/database.js';

const at = (minute: number) => new Date(Date.UTC(2026, 10, 20, 10, minute));

function endpoint(accountId: string, createdAt: Date, overrides: Partial<WebhookEndpoint> = {}): WebhookEndpoint {
  return {
    id: randomUUID(),
    accountId,
    url: 'https://hooks.example.org/portico',
    eventTypes: ['patient.created'],
    description: 'first',
    status: 'ACTIVE',
    secret: 'whsec_test',
    previousSecret: null,
    previousSecretExpiresAt: null,
    consecutiveFailures: 0,
    failingSince: null,
    lastDeliveryAttemptAt: null,
    lastSuccessfulDeliveryAt: null,
    createdAt,
    updatedAt: createdAt,
    version: 1,
    deletedAt: null,
    ...overrides,
  };
}

function behavesAsWebhookEndpointStore(name: string, open: () => Promise<WebhookEndpointStore>): void {
  describe(name, () => {
    let store: WebhookEndpointStore;
    let account: string;
    beforeEach(async () => {
      store = await open();
      account = randomUUID();
    });

    it('lists live endpoints newest first (createdAt, then id), in pages after a position, and only the account\'s', async () => {
      const same = at(5);
      const stored = [endpoint(account, at(1)), endpoint(account, same), endpoint(account, same), endpoint(account, at(9))];
      for (const e of stored) await store.insert(e);
      await store.insert(endpoint(randomUUID(), at(7)));
      const expected = [...stored].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1)).map((e) => e.id);
      const first = await store.listLive(account, 2);
      expect(first.items.map((e) => e.id)).to.deep.equal(expected.slice(0, 2));
      expect(first.hasMore).to.equal(true);
      const last = first.items.at(-1)!;
      const second = await store.listLive(account, 2, { createdAt: last.createdAt, id: last.id });
      expect(second.items.map((e) => e.id)).to.deep.equal(expected.slice(2));
      expect(second.hasMore).to.equal(false);
    });

    it('updates at the version read, bumping it; a null description removes it; a stale version changes nothing', async () => {
      const stored = endpoint(account, at(1));
      await store.insert(stored);
      expect(await store.readLive(account, stored.id)).to.deep.include({ description: 'first', version: 1 }); // cached now
      const updated = await store.update(account, stored.id, 1, { status: 'PAUSED', description: null }, at(2));
      expect(updated).to.deep.include({ status: 'PAUSED', description: null, version: 2, updatedAt: at(2) });
      expect(await store.update(account, stored.id, 1, { status: 'ACTIVE' }, at(3))).to.equal(null);
      for (const read of [store.findLive(account, stored.id), store.readLive(account, stored.id)]) {
        expect(await read).to.deep.include({ status: 'PAUSED', description: null, version: 2 });
      }
      expect((await store.listLive(account, 10)).items[0]).to.deep.include({ status: 'PAUSED', version: 2 });
    });

    it('soft-deletes at the version read: gone from every read, and takes no further change', async () => {
      const stored = endpoint(account, at(1));
      await store.insert(stored);
      await store.listLive(account, 10); // cached now
      expect(await store.softDelete(account, stored.id, 2, at(2))).to.equal(false);
      expect(await store.softDelete(account, stored.id, 1, at(2))).to.equal(true);
      expect(await store.findLive(account, stored.id)).to.equal(null);
      expect(await store.readLive(account, stored.id)).to.equal(null);
      expect((await store.listLive(account, 10)).items).to.deep.equal([]);
      expect(await store.update(account, stored.id, 2, { status: 'PAUSED' }, at(3))).to.equal(null);
      expect(await store.softDelete(account, stored.id, 2, at(3))).to.equal(false);
    });

    it('does not reach another account\'s endpoint by id', async () => {
      const stored = endpoint(account, at(1));
      await store.insert(stored);
      const other = randomUUID();
      expect(await store.findLive(other, stored.id)).to.equal(null);
      expect(await store.update(other, stored.id, 1, { status: 'PAUSED' }, at(2))).to.equal(null);
      expect(await store.softDelete(other, stored.id, 1, at(2))).to.equal(false);
      expect(await store.findLive(account, stored.id)).to.deep.include({ status: 'ACTIVE', version: 1 });
    });
  });
}

describe('platform: webhook endpoint stores', () => {
  let database: TestDatabase;
  withTestDatabase((opened) => (database = opened));
  behavesAsWebhookEndpointStore('WebhookEndpointRepository (MongoDB, cached live lists)', async () => {
    const caches = await CacheHub.create();
    const repository = new WebhookEndpointRepository(database.db, database.locks, caches.cache('webhook-endpoints', { max: 100, ttlMs: 60_000 }));
    await repository.init();
    return repository;
  });
  behavesAsWebhookEndpointStore('FakeWebhookEndpointStore', async () => new FakeWebhookEndpointStore());
});
