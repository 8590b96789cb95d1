// patients: _id is "<tenant>/<patient id>", so every read names its tenant and is a primary-key lookup.
import type { Collection, Db } from 'mongodb';
import type { SharedCache } from '../../infra/cache.js';
import type { DocumentLocks } from '../../infra/locks.js';
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

  async init(): Promise<void> {
    await this.collection.createIndex({ tenantId: 1, createdAt: -1 });
  }

  async insert(patient: Patient): Promise<void> {
    const { version, ...rest } = patient;
    await this.collection.insertOne({ _id: keyOf(patient.tenantId, patient.id), _version: version, ...rest });
  }

  /** The tenant's patient, deleted or not; null when the tenant never had it. */
  async find(tenantId: string, id: string): Promise<Patient | null> {
    const key = keyOf(tenantId, id);
    const load = async () => {
      const doc = await this.collection.findOne({ _id: key });
      return doc && toPatient(doc);
    };
    return this.cache ? this.cache.getOrLoad(key, load) : load();
  }

  /** Soft-deletes a live patient; false when it is absent or already deleted. */
  async softDelete(tenantId: string, id: string, at: Date): Promise<boolean> {
    const key = keyOf(tenantId, id);
    const result = await this.locks.withLock(`patients:${key}`, () =>
      this.collection.updateOne({ _id: key, deletedAt: null }, { $set: { deletedAt: at, updatedAt: at }, $inc: { _version: 1 } }),
    );
    this.cache?.invalidate(keyOf(tenantId, id));
    return result.modifiedCount === 1;
  }
}

function toPatient(doc: PatientDocument): Patient {
  const { _id, _version, ...rest } = doc;
  return { ...rest, version: _version };
}
