// patients: _id is "<tenant>/<patient id>", so every read names its tenant and is a primary-key lookup.
import type { Collection, Db } from 'mongodb';
import type { SharedCache } from '../../infra/cache.js';
import type { DocumentLocks } from '../../../../core/src/infra/locks.js';
import type { CreatePatient } from './schema.js';

export interface Patient extends CreatePatient {
  id: string;
  tenantId: string;
  createdAt: Date;
  updatedAt: Date;
  version: number;
  deletedAt: Date | null;
}

interface PatientDocument extends Omit<Patient, 'version'> {
  _id: string;
  _version: number;
}

const keyOf = (tenantId: string, id: string) => `${tenantId}/${id}`;

export class PatientRepository {
  private readonly collection: Collection<PatientDocument>;

  /** Profiles change only by deletion, which invalidates, so a cached profile is the current one. */
  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
    private readonly cache?: SharedCache<Patient>,
  ) {
    this.collection = db.collection<PatientDocument>('patients');
  }

  async init(): Promise<void> {}

  async insert(patient: Patient): Promise<void> {
    const { version, ...rest } = patient;
    await this.collection.insertOne({ _id: keyOf(patient.tenantId, patient.id), _version: version, ...rest });
  }

  /** The tenant's patient, deleted or not; null when the tenant never had it. Served from the cache. */
  async find(tenantId: string, id: string): Promise<Patient | null> {
    const key = keyOf(tenantId, id);
    return this.cache ? this.cache.getOrLoad(key, () => this.findStored(tenantId, id)) : this.findStored(tenantId, id);
  }

  /** The same, read from the database (for writes). */
  async findStored(tenantId: string, id: string): Promise<Patient | null> {
    const doc = await this.collection.findOne({ _id: keyOf(tenantId, id) });
    return doc && Object.freeze(toPatient(doc));
  }

  /** Soft-deletes the patient if it is still live at `version`; false when it moved on or went away. */
  async softDelete(tenantId: string, id: string, version: number, at: Date): Promise<boolean> {
    const key = keyOf(tenantId, id);
    try {
      const result = await this.locks.withLock(`patients:${key}`, () =>
        this.collection.updateOne({ _id: key, _version: version, deletedAt: null }, { $set: { deletedAt: at, updatedAt: at }, $inc: { _version: 1 } }),
      );
      return result.modifiedCount === 1;
    } finally {
      this.cache?.invalidate(key); // also after an ambiguous failure: the write may have happened
    }
  }
}

function toPatient(doc: PatientDocument): Patient {
  const { _id, _version, ...rest } = doc;
  return { ...rest, version: _version };
}
