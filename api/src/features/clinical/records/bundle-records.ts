// A bundle's record (observation_bundles, `<connection>/<generation>`): the whole bundle as it will be stored,
// written before anything else of it (bundle-writer.ts), read by those who apply it (bundle-applier.ts) or lay it
// over what they read (store.ts), and deleted once no one can need it. Also the answers a bundle's writer and
// readers give when the ground moves under them.
import { gunzipSync, gzipSync } from 'node:zlib';
import { Binary, type Collection } from 'mongodb';
import { AppError } from '../../../shared/http/errors.js';
import { BEGINNING } from '../dates.js';
import type { ObservationDocument } from './document.js';
import type { NormalizedObservation } from '../ingest/observations.js';
import { isDuplicateKey } from '#core/infra/mongo.js';

/** An observation as a bundle writes it: everything but its _id and firstIngestedAt. */
export type StoredFields = Omit<ObservationDocument, '_id' | 'firstIngestedAt' | 'seq' | 'rev'> & { updatedAt: Date };

/** What is stored of an observation of the connection, ingested at `at` (the store and its fake alike). */
export function storedFields(
  target: { accountId: string; connectionId: string },
  o: NormalizedObservation,
  at: Date,
): StoredFields {
  return {
    connectionId: target.connectionId,
    accountId: target.accountId,
    ...(o.resourceType !== undefined && o.resourceType !== 'Observation' && { resourceType: o.resourceType }),
    resourceId: o.resourceId,
    code: o.code,
    category: o.category,
    date: o.date,
    sortDate: o.date?.start ?? BEGINNING,
    confidentiality: o.confidentiality,
    sensitivity: o.sensitivity,
    resource: o.resource,
    ...(o.search && { search: o.search }),
    updatedAt: at,
  };
}

/** What a replacement unsets besides what it sets: the tombstone mark of a removed record it writes anew. */
export const unsetRemoved = (fields: StoredFields) => (fields.removed ? {} : { $unset: { removed: '' as const } });

/**
 * A bundle's record: what it writes, kept until it is applied and no reader needs it. The observations are one
 * gzipped JSON document (dates as ISO strings): the embedded database converts a document field by field, and a
 * bundle as fields cost as much to store as its observations did (0.7 s for 1000); as one string, 60 ms for
 * 0.9 MB; gzipped (2 ms at level 1), 5 ms.
 */
export interface BundleRecord {
  /** `${connectionId}/${gen}` */
  _id: string;
  connectionId: string;
  gen: number;
  at: Date;
  observations: Binary;
}

export function packObservations(stored: StoredFields[]): Binary {
  return new Binary(gzipSync(JSON.stringify(stored), { level: 1 }));
}

/** The observations of a record, as they were before it was written. */
export function recordObservations(record: BundleRecord): StoredFields[] {
  return (JSON.parse(gunzipSync(record.observations.buffer).toString('utf8')) as StoredFields[]).map((fields) => ({
    ...fields,
    sortDate: new Date(fields.sortDate),
    updatedAt: new Date(fields.updatedAt),
    date: fields.date && { start: new Date(fields.date.start), end: new Date(fields.date.end) },
  }));
}

export const BUNDLES = 'observation_bundles';

export const lostLease = () =>
  new AppError(
    'SERVICE_UNAVAILABLE',
    'The bundle took too long to write and another took its place; send it again.',
    {},
    { 'Retry-After': '1' },
    { storable: false },
  );
export const interrupted = () =>
  new AppError(
    'SERVICE_UNAVAILABLE',
    'The bundle could not be written whole (the database was interrupted); send it again.',
    {},
    { 'Retry-After': '1' },
    { storable: false },
  );
export const movedOn = () =>
  new AppError(
    'SERVICE_UNAVAILABLE',
    "The connection's observations changed while they were read; retry.",
    {},
    { 'Retry-After': '1' },
    { storable: false },
  );

/**
 * Inserts a bundle's record. Its _id is new (the generation is this writer's alone), so one that exists is this
 * same insert landing twice: the driver retries a write whose connection broke (the database restarting), and
 * the first attempt may have landed.
 */
export async function insertRecord(records: Collection<BundleRecord>, record: BundleRecord): Promise<void> {
  try {
    await records.insertOne(record);
  } catch (error) {
    if (!isDuplicateKey(error)) throw error;
    const found = await records.findOne({ _id: record._id });
    if (!found || !Buffer.from(found.observations.buffer).equals(Buffer.from(record.observations.buffer))) throw error;
  }
}
