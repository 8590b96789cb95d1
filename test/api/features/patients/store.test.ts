// PatientStore's behaviour, held the same for the MongoDB repository (on the embedded database, with its cache)
// and for the in-memory fake the service's unit tests use (docs/architecture.md, "Stores and fakes").
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { CacheHub } from '../../../../api/src/shared/infra/cache.js';
import { FakePatientStore } from '../../../../api/src/features/patients/fake-store.js';
import {
  PATIENTS,
  PatientRepository,
  type Patient,
  type PatientStore,
} from '../../../../api/src/features/patients/store.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

const T0 = new Date('2026-11-20T10:00:00.000Z');
const T1 = new Date('2026-11-21T10:00:00.000Z');

function patient(tenantId: string, overrides: Partial<Patient> = {}): Patient {
  return {
    id: randomUUID(),
    tenantId,
    givenName: 'Ada',
    familyName: 'Lovelace',
    birthDate: '1815-12-10',
    createdAt: T0,
    updatedAt: T0,
    version: 1,
    deletedAt: null,
    ...overrides,
  };
}

describeStore<PatientStore>(
  'platform: patient stores',
  {
    mongo: {
      name: 'PatientRepository (MongoDB, cached)',
      open: async ({ db, locks }) => {
        const caches = await CacheHub.create();
        const repository = new PatientRepository(db, locks, caches.cache('patients', { max: 100, ttlMs: 60_000 }));
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakePatientStore', open: async () => new FakePatientStore() },
  },
  ({ store, it }) => {
    const tenant = randomUUID();

    it('finds what it stored, within its tenant only', async () => {
      const stored = patient(tenant);
      await store().insert(stored);
      expect(await store().find(tenant, stored.id)).to.deep.equal(stored);
      expect(await store().findStored(tenant, stored.id)).to.deep.equal(stored);
      expect(await store().find(randomUUID(), stored.id)).to.equal(null);
      expect(await store().findStored(randomUUID(), stored.id)).to.equal(null);
      expect(await store().find(tenant, randomUUID())).to.equal(null);
    });

    it('refuses an id that exists in the tenant (duplicate key), and takes the same id in another tenant', async () => {
      const stored = patient(tenant);
      await store().insert(stored);
      const error = await store()
        .insert({ ...stored, givenName: 'Other' })
        .catch((e: unknown) => e);
      expect(error).to.have.property('code', 11000);
      expect((await store().find(tenant, stored.id))?.givenName).to.equal('Ada');
      const elsewhere = { ...stored, tenantId: randomUUID(), givenName: 'Grace' };
      await store().insert(elsewhere);
      expect(await store().find(elsewhere.tenantId, stored.id)).to.deep.equal(elsewhere);
      expect((await store().find(tenant, stored.id))?.givenName).to.equal('Ada');
    });

    it('takes an insert repeated with its change id as done, and refuses one with another change id', async () => {
      const stored = patient(tenant);
      const changeId = randomUUID();
      await store().insert(stored, changeId);
      await store().insert(stored, changeId); // the insert's own first attempt: not a conflict
      const error = await store()
        .insert(stored, randomUUID())
        .catch((e: unknown) => e);
      expect(error).to.have.property('code', 11000);
      expect(await store().find(tenant, stored.id)).to.deep.equal(stored);
    });

    it('soft-deletes once, at the version read: the version moves on and the record stays', async () => {
      const stored = patient(tenant);
      await store().insert(stored);
      expect(await store().find(tenant, stored.id)).to.deep.include({ deletedAt: null }); // cached now
      expect(await store().softDelete(tenant, stored.id, 2, T1), 'a version never held').to.equal(false);
      expect((await store().find(tenant, stored.id))?.deletedAt).to.equal(null);
      expect(await store().softDelete(tenant, stored.id, 1, T1)).to.equal(true);
      expect(await store().softDelete(tenant, stored.id, 1, T1), 'the same version again').to.equal(false);
      expect(await store().softDelete(tenant, stored.id, 2, T1), 'deleted is final').to.equal(false);
      expect(await store().find(tenant, stored.id)).to.deep.include({ deletedAt: T1, updatedAt: T1, version: 2 });
      expect(await store().findStored(tenant, stored.id)).to.deep.include({ deletedAt: T1, updatedAt: T1, version: 2 });
      expect(await store().softDelete(randomUUID(), stored.id, 2, T1), 'another tenant').to.equal(false);
      expect(await store().softDelete(tenant, randomUUID(), 1, T1), 'an unknown id').to.equal(false);
    });

    it('answers a deletion repeated with its change id as done, one with another change id as not', async () => {
      const stored = patient(tenant);
      await store().insert(stored);
      const changeId = randomUUID();
      expect(await store().softDelete(tenant, stored.id, 1, T1, changeId)).to.equal(true);
      expect(await store().softDelete(tenant, stored.id, 1, T1, changeId), 'its own first attempt').to.equal(true);
      expect(await store().softDelete(tenant, stored.id, 1, T1, randomUUID())).to.equal(false);
      expect(await store().findStored(tenant, stored.id)).to.deep.include({ deletedAt: T1, version: 2 });
    });

    it('names where a change to the patient is recorded: its document in the tenant', async () => {
      const id = randomUUID();
      expect(store().target(tenant, id, 3)).to.deep.equal({ collection: PATIENTS, id: `${tenant}/${id}`, version: 3 });
    });
  },
);
