// AccountStore's behaviour, held the same for the MongoDB repository (on the embedded database, with the cache the
// API gives it) and the in-memory fake (docs/architecture.md, "Stores and fakes"): a quota reservation is one
// conditional update, so concurrent ones never take more than the limit.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { CacheHub } from '../../../../api/src/shared/infra/cache.js';
import { FakeAccountStore } from '../../../../api/src/features/accounts/fake-store.js';
import {
  CustomerAccountRepository,
  type AccountStore,
  type CustomerAccount,
} from '../../../../api/src/features/accounts/store.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

const T0 = new Date('2026-11-20T10:00:00.000Z');
const T1 = new Date('2026-11-21T10:00:00.000Z');

describeStore<AccountStore>(
  'accounts: account stores',
  {
    mongo: {
      name: 'CustomerAccountRepository (MongoDB, cached)',
      open: async ({ db, locks }) => {
        const caches = await CacheHub.create();
        const repository = new CustomerAccountRepository(
          db,
          locks,
          caches.cache('accounts', { max: 100, ttlMs: 60_000 }),
        );
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakeAccountStore', open: async () => new FakeAccountStore() },
  },
  ({ store, it }) => {
    let account: CustomerAccount;
    beforeEach(async () => {
      account = { id: randomUUID(), name: 'Acme Health', status: 'ACTIVE', createdAt: T0 };
      await store().insert(account);
    });

    it('reads an account back, and nothing for an unknown id', async () => {
      expect(await store().get(account.id)).to.deep.equal(account);
      expect(await store().get(randomUUID())).to.equal(null);
    });

    it('refuses an id that exists (duplicate key), keeping the first account', async () => {
      const error = await store()
        .insert({ ...account, name: 'Other' })
        .catch((e: unknown) => e);
      expect(error).to.have.property('code', 11000);
      expect(await store().get(account.id)).to.deep.equal(account);
    });

    it('grants exactly `max` of many concurrent reservations, and a release frees one', async () => {
      const granted = await Promise.all(
        Array.from({ length: 12 }, () => store().reserve(account.id, 'webhookEndpoints', 5)),
      );
      expect(granted.filter(Boolean)).to.have.length(5);
      await store().release(account.id, 'webhookEndpoints');
      expect(await store().reserve(account.id, 'webhookEndpoints', 5)).to.equal(true);
      expect(await store().reserve(account.id, 'webhookEndpoints', 5)).to.equal(false);
    });

    it('never releases below zero, and reserves nothing for an unknown account', async () => {
      await store().release(account.id, 'webhookEndpoints');
      expect(await store().reserve(account.id, 'webhookEndpoints', 1)).to.equal(true);
      expect(await store().reserve(account.id, 'webhookEndpoints', 1)).to.equal(false);
      expect(await store().reserve(randomUUID(), 'webhookEndpoints', 1)).to.equal(false);
      await store().release(randomUUID(), 'webhookEndpoints'); // nothing to release: no error
    });

    it('suspends and reactivates: the account after, seen by the next read (also a cached one)', async () => {
      expect(await store().get(account.id)).to.include({ status: 'ACTIVE' }); // cached now
      expect(await store().setStatus(account.id, 'SUSPENDED', T1)).to.deep.equal({ ...account, status: 'SUSPENDED' });
      expect(await store().get(account.id)).to.include({ status: 'SUSPENDED' });
      expect(await store().setStatus(account.id, 'ACTIVE', T1)).to.deep.equal(account);
      expect(await store().get(account.id)).to.deep.equal(account);
    });

    it("changes no status of an unknown account, and the quota is not the status's", async () => {
      expect(await store().setStatus(randomUUID(), 'SUSPENDED', T1)).to.equal(null);
      expect(await store().reserve(account.id, 'webhookEndpoints', 1)).to.equal(true);
      await store().setStatus(account.id, 'SUSPENDED', T1);
      expect(await store().reserve(account.id, 'webhookEndpoints', 1), 'the usage survives a status change').to.equal(
        false,
      );
    });
  },
);
