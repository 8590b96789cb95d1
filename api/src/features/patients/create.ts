// Patient profiles, built (docs/architecture.md, "One shape for a feature"): the store, with its cache, and the
// service.
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import { PatientService, type PatientServiceDeps } from './service.js';
import { PatientRepository } from './store.js';

export async function createPatients(
  { db, longDb, locks, caches, clock }: Infrastructure,
  uses: Pick<PatientServiceDeps, 'authz' | 'accounts' | 'outbox'>,
) {
  const store = new PatientRepository(db, locks, caches.cache('patients', { max: 50_000, ttlMs: 60_000 }));
  await store.init(longDb);
  return { store, service: new PatientService({ patients: store, ...uses, clock }) };
}
