// patients: _id is "<tenant>/<patient id>", so every read names its tenant and is a primary-key lookup.
// Writes go through VersionedCollection; profiles change only by deletion, which invalidates the cache, so
// a cached profile is the current one.
import type { Db } from 'mongodb';
import { findById } from '#core/infra/mongo.js';
import type { DocumentLocks } from '#core/infra/locks.js';
import type { SharedCache } from '../../shared/infra/cache.js';
import { VersionedCollection } from '../../shared/infra/versioned-collection.js';
import type { ChangeTarget } from '../events/index.js';
import type { CreatePatient } from './schema.js';

export interface Patient extends CreatePatient {
  id: string;
  tenantId: string;
  createdAt: Date;
  updatedAt: Date;
  version: number;
  deletedAt: Date | null;
}

/** What the patient service needs of storage; PatientRepository (MongoDB) and FakePatientStore (tests). */
export interface PatientStore {
  /** Where a change to the patient leaving it at `version` is recorded (for the outbox). */
  target(tenantId: string, id: string, version: number): ChangeTarget;
  /** Fails (duplicate key) if the id exists in the tenant. `changeId` is recorded with the insert. */
  insert(patient: Patient, changeId?: string): Promise<void>;
  /** The tenant's patient, deleted or not; null when the tenant never had it. May come from a cache. */
  find(tenantId: string, id: string): Promise<Patient | null>;
  /** The same, as stored now (for writes). */
  findStored(tenantId: string, id: string): Promise<Patient | null>;
  /** Soft-deletes the patient if it is still live at `version`; false when it moved on or went away. */
  softDelete(tenantId: string, id: string, version: number, at: Date, changeId?: string): Promise<boolean>;
}

export const PATIENTS = 'patients';

interface PatientDocument extends Omit<Patient, 'version'> {
  _id: string;
  _version: number;
  _changes?: Record<string, string>;
}

const keyOf = (tenantId: string, id: string) => `${tenantId}/${id}`;

export class PatientRepository implements PatientStore {
  private readonly documents: VersionedCollection<PatientDocument>;

  constructor(
    private readonly db: Db,
    locks: DocumentLocks,
    private readonly cache?: SharedCache<Patient>,
  ) {
    this.documents = new VersionedCollection(db.collection<PatientDocument>(PATIENTS), locks, (key) =>
      cache?.invalidate(key),
    );
  }

  async init(_indexes?: Db): Promise<void> {}

  target(tenantId: string, id: string, version: number): ChangeTarget {
    return { collection: PATIENTS, id: keyOf(tenantId, id), version };
  }

  async insert(patient: Patient, changeId?: string): Promise<void> {
    const { version, ...rest } = patient;
    await this.documents.insert({ _id: keyOf(patient.tenantId, patient.id), _version: version, ...rest }, changeId);
  }

  async find(tenantId: string, id: string): Promise<Patient | null> {
    return this.cache
      ? this.cache.getOrLoad(keyOf(tenantId, id), () => this.findStored(tenantId, id))
      : this.findStored(tenantId, id);
  }

  async findStored(tenantId: string, id: string): Promise<Patient | null> {
    const doc = await findById<PatientDocument>(this.db, PATIENTS, keyOf(tenantId, id));
    return doc && Object.freeze(toPatient(doc));
  }

  softDelete(tenantId: string, id: string, version: number, at: Date, changeId?: string): Promise<boolean> {
    return this.documents.softDelete(keyOf(tenantId, id), version, at, changeId);
  }
}

function toPatient(doc: PatientDocument): Patient {
  const { _id, _version, _changes, ...rest } = doc;
  return { ...rest, version: _version };
}
