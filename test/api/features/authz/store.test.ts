// TupleStore's behaviour, held the same for the MongoDB repository (on the embedded database, with the cache the
// API gives it) and for the in-memory fake the authorization check's unit tests use (docs/architecture.md, "Stores
// and fakes"): relation tuples as sets of subjects per (tenant, object, relation), which no read leaves.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { CacheHub } from '../../../../api/src/shared/infra/cache.js';
import { FakeTupleStore } from '../../../../api/src/features/authz/fake-store.js';
import { TupleRepository, type TupleStore } from '../../../../api/src/features/authz/tuples.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

const sorted = (subjects: string[]) => [...subjects].sort();

describeStore<TupleStore>(
  'authz: tuple stores',
  {
    mongo: {
      name: 'TupleRepository (MongoDB, cached)',
      open: async ({ db, locks }) => {
        const caches = await CacheHub.create();
        const repository = new TupleRepository(db, locks, caches.cache('authz', { max: 100, ttlMs: 60_000 }));
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakeTupleStore', open: async () => new FakeTupleStore() },
  },
  ({ store, it }) => {
    let tenant: string;
    let object: string;
    beforeEach(() => {
      tenant = randomUUID();
      object = `patient:${randomUUID()}`;
    });
    const account = (id: string) => `customer_account:${id}`;

    it('gives the subjects written for a relation on an object, each once; none for what was not', async () => {
      const [a, b] = [account(randomUUID()), `${account(randomUUID())}#member`];
      await store().write(tenant, { object, relation: 'tenant', subject: a });
      await store().write(tenant, { object, relation: 'tenant', subject: b });
      await store().write(tenant, { object, relation: 'tenant', subject: a });
      expect(sorted(await store().subjects(tenant, object, 'tenant'))).to.deep.equal(sorted([a, b]));
      expect(sorted(await store().subjects(tenant, object, 'tenant', true))).to.deep.equal(sorted([a, b]));
      expect(await store().subjects(tenant, object, 'viewer')).to.deep.equal([]);
      expect(await store().subjects(tenant, `patient:${randomUUID()}`, 'tenant')).to.deep.equal([]);
    });

    it("keeps each tenant's tuples to itself, for the same object and relation", async () => {
      const other = randomUUID();
      await store().write(tenant, { object, relation: 'tenant', subject: account(tenant) });
      await store().write(other, { object, relation: 'tenant', subject: account(other) });
      expect(await store().subjects(tenant, object, 'tenant')).to.deep.equal([account(tenant)]);
      expect(await store().subjects(other, object, 'tenant')).to.deep.equal([account(other)]);
      await store().delete(other, { object, relation: 'tenant', subject: account(tenant) });
      expect(await store().subjects(tenant, object, 'tenant'), 'a delete in another tenant').to.deep.equal([
        account(tenant),
      ]);
      expect(await store().subjects(randomUUID(), object, 'tenant')).to.deep.equal([]);
    });

    it('deletes one subject, and the next read sees it gone (a cached one too)', async () => {
      const [a, b] = [account(randomUUID()), account(randomUUID())];
      await store().write(tenant, { object, relation: 'tenant', subject: a });
      await store().write(tenant, { object, relation: 'tenant', subject: b });
      expect(await store().subjects(tenant, object, 'tenant')).to.have.length(2); // cached now
      await store().delete(tenant, { object, relation: 'tenant', subject: a });
      expect(await store().subjects(tenant, object, 'tenant')).to.deep.equal([b]);
      await store().delete(tenant, { object, relation: 'tenant', subject: b });
      expect(await store().subjects(tenant, object, 'tenant')).to.deep.equal([]);
      expect(await store().subjects(tenant, object, 'tenant', true)).to.deep.equal([]);
      // Nothing there: no error.
      await store().delete(tenant, { object: `patient:${randomUUID()}`, relation: 'tenant', subject: a });
    });

    it('sees a tuple written after a read found none (no tuple yet is not remembered)', async () => {
      expect(await store().subjects(tenant, object, 'tenant')).to.deep.equal([]);
      await store().write(tenant, { object, relation: 'tenant', subject: account(tenant) });
      expect(await store().subjects(tenant, object, 'tenant')).to.deep.equal([account(tenant)]);
    });
  },
);
