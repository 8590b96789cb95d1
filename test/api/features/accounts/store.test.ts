// AccountStore's quotas, held the same for the MongoDB repository and the in-memory fake: a reservation is
// one conditional update, so concurrent ones never take more than the limit.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { FakeAccountStore } from '../../../../api/src/features/accounts/fake-store.js';
import { CustomerAccountRepository, type AccountStore } from '../../../../api/src/features/accounts/store.js';
import { withTestDatabase, type TestDatabase } from '../../../../testkit/database.js';

function behavesAsAccountStore(name: string, open: () => Promise<AccountStore>): void {
  describe(name, () => {
    let store: AccountStore;
    let id: string;
    beforeEach(async () => {
      store = await open();
      id = randomUUID();
      await store.insert({ id, name: 'Acme Health', status: 'ACTIVE', createdAt: new Date('2026-11-20T10:00:00.000Z') });
    });

    it('reads an account back, and nothing for an unknown id', async () => {
      expect(await store.get(id)).to.deep.equal({ id, name: 'Acme Health', status: 'ACTIVE', createdAt: new Date('2026-11-20T10:00:00.000Z') });
      expect(await store.get(randomUUID())).to.equal(null);
    });

    it('grants exactly `max` of many concurrent reservations, and a release frees one', async () => {
      const granted = await Promise.all(Array.from({ length: 12 }, () => store.reserve(id, 'webhookEndpoints', 5)));
      expect(granted.filter(Boolean)).to.have.length(5);
      await store.release(id, 'webhookEndpoints');
      expect(await store.reserve(id, 'webhookEndpoints', 5)).to.equal(true);
      expect(await store.reserve(id, 'webhookEndpoints', 5)).to.equal(false);
    });

    it('never releases below zero, and reserves nothing for an unknown account', async () => {
      await store.release(id, 'webhookEndpoints');
      expect(await store.reserve(id, 'webhookEndpoints', 1)).to.equal(true);
      expect(await store.reserve(id, 'webhookEndpoints', 1)).to.equal(false);
      expect(await store.reserve(randomUUID(), 'webhookEndpoints', 1)).to.equal(false);
    });
  });
}

describe('accounts: account stores', () => {
  let database: TestDatabase;
  withTestDatabase((opened) => (database = opened));
  behavesAsAccountStore('CustomerAccountRepository (MongoDB)', async () => new CustomerAccountRepository(database.db, database.locks));
  behavesAsAccountStore('FakeAccountStore', async () => new FakeAccountStore());
});
