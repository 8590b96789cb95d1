// In-memory PatientStore for unit tests of the patient service; test/api/features/patients/store.test.ts
// holds it and PatientRepository to the same behaviour.
import { MemoryVersioned } from '../../shared/infra/memory-versioned.js';
import type { ChangeTarget } from '../events/index.js';
import type { Clock } from '#core/clock.js';
import { PatientService, type PatientServiceDeps } from './service.js';
import { PATIENTS, type Patient, type PatientStore } from './store.js';

export class FakePatientStore implements PatientStore {
  private readonly patients = new MemoryVersioned<Patient>();

  target(tenantId: string, id: string, version: number): ChangeTarget {
    return { collection: PATIENTS, id: `${tenantId}/${id}`, version };
  }

  async insert(patient: Patient, changeId?: string): Promise<void> {
    this.patients.insert(`${patient.tenantId}/${patient.id}`, patient, changeId);
  }

  async find(tenantId: string, id: string): Promise<Patient | null> {
    return this.patients.get(`${tenantId}/${id}`);
  }

  findStored(tenantId: string, id: string): Promise<Patient | null> {
    return this.find(tenantId, id);
  }

  async softDelete(tenantId: string, id: string, version: number, at: Date, changeId?: string): Promise<boolean> {
    return this.patients.softDelete(`${tenantId}/${id}`, version, at, changeId);
  }
}

/** The feature as createPatients builds it, on the fake store: for the service's unit tests. */
export function createFakePatients(clock: Clock, uses: Pick<PatientServiceDeps, 'authz' | 'accounts' | 'outbox'>) {
  const store = new FakePatientStore();
  return { store, service: new PatientService({ patients: store, ...uses, clock }) };
}
