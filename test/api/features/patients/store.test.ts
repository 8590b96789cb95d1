// PatientStore's behaviour, held the same for the MongoDB repository (on the real embedded database, with
// its cache) and for the in-memory fake the service's unit tests use.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { CacheHub } from '../../../../api/src/shared/infra/cache.js';
import { FakePatientStore } from '../../../../api/src/features/patients/fake-store.js';
import { PatientRepository, type Patient, type PatientStore } from '../../../../api/src/features/patients/store.js';
import { withTestDatabase, type TestDatabase } from '../../../../testkit/database.js';

const T0 = new Date('2026-11-20T10:00:00.000Z');
const T1 = new Date('2026-11-21T10:00:00.000Z');

function patient(tenantId: string, overrides: Partial<Patient> = {}): Patient {
  return { id: randomUUID(), tenantId, givenName: 'Ada', familyName: 'Lovelace', birthDate: '1815-12-10', createdAt: T0, updatedAt: T0, version: 1, deletedAt: null, ...overrides };
}

function behavesAsPatientStore(name: string, open: () => Promise<PatientStore>): void {
  describe(name, () => {
    let store: PatientStore;
    const tenant = randomUUID();
    beforeEach(async () => {
      store = await open();
    });

    it('finds what it stored, within its tenant only', async () => {
      const stored = patient(tenant);
      await store.insert(stored);
      expect(await store.find(tenant, stored.id)).to.deep.equal(stored);
      expect(await store.findStored(tenant, stored.id)).to.deep.equal(stored);
      expect(await store.find(randomUUID(), stored.id)).to.equal(null);
      expect(await store.find(tenant, randomUUID())).to.equal(null);
    });

    it('refuses an id that exists in the tenant (duplicate key)', async () => {
      const stored = patient(tenant);
      await store.insert(stored);
      const error = await store.insert({ ...stored, givenName: 'Other' }).catch((e: unknown) => e);
      expect(error).to.have.property('code', 11000);
      expect((await store.find(tenant, stored.id))?.givenName).to.equal('Ada');
    });

    it('soft-deletes once, at the version read: the version moves on and the record stays', async () => {
      const stored = patient(tenant);
      await store.insert(stored);
      expect(await store.softDelete(tenant, stored.id, 2, T1), 'a version never held').to.equal(false);
      expect((await store.find(tenant, stored.id))?.deletedAt).to.equal(null);
      expect(await store.softDelete(tenant, stored.id, 1, T1)).to.equal(true);
      expect(await store.softDelete(tenant, stored.id, 1, T1), 'the same version again').to.equal(false);
      expect(await store.softDelete(tenant, stored.id, 2, T1), 'deleted is final').to.equal(false);
      expect(await store.find(tenant, stored.id)).to.deep.include({ deletedAt: T1, updatedAt: T1, version: 2 });
      expect(await store.softDelete(randomUUID(), stored.id, 2, T1), 'another tenant').to.equal(false);
    });
  });
}

describe('platform: patient stores', () => {
  let database: TestDatabase;
  withTestDatabase((opened) => (database = opened));
  behavesAsPatientStore('PatientRepository (MongoDB, cached)', async () => {
    const caches = await CacheHub.create();
    const repository = new PatientRepository(database.db, database.locks, caches.cache('patients', { max: 100, ttlMs: 60_000 }));
    await repository.init();
    return repository;
  });
  behavesAsPatientStore('FakePatientStore', async () => new FakePatientStore());
});
