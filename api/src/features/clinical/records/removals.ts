// What a full sync removes (docs/connecting.md, "Sync"): the connection's records of the types it read whole that it
// did not write, found by when they were last written, and written over with tombstones (document.ts, `removed`) in
// bundles like any other, so that bundles, checkpoints and every replica's index carry the removal.
import type { Collection } from 'mongodb';
import { BEGINNING } from '../dates.js';
import type { StoredFields } from './bundle-records.js';
import { recordKey, tombstoneOf, type ObservationDocument } from './document.js';
import type { Visibility } from './head-document.js';

/** Records a removal writes per bundle (as many as an ingest's). */
const REMOVALS_PER_BUNDLE = 1000;
/** Point reads at once when candidates are read again. */
const READS_AT_ONCE = 16;

export interface RemovalDeps {
  /** The records, with the deadline of long operations (store.ts). */
  collection: Collection<ObservationDocument>;
  /** The connection's head once its pending replacements are applied (BundleApplier.applied). */
  applied(connectionId: string): Promise<Visibility>;
  /** Writes one bundle, deciding what it holds under the writer's lease (`select`); null when it was left empty. */
  write(
    connectionId: string,
    stored: StoredFields[],
    select: (stored: StoredFields[], renew: () => Promise<void>) => Promise<StoredFields[]>,
  ): Promise<{ written: StoredFields[] } | null>;
}

/**
 * Removes the connection's records of `types` last written before `before`, stamped `at`: how many, by type, and after
 * each bundle `onRemoved` with that bundle's.
 */
export async function removeStale(
  deps: RemovalDeps,
  {
    target,
    types,
    before,
    at,
  }: { target: { accountId: string; connectionId: string }; types: readonly string[]; before: Date; at: Date },
  onRemoved?: (counts: Map<string, number>) => Promise<void>,
): Promise<Map<string, number>> {
  const { connectionId, accountId } = target;
  const removed = new Map<string, number>();
  if (types.length === 0) return removed;
  // What readers see (pending replacements applied: a record written anew is not taken for its old copy). One read for
  // every type: the embedded database reads the whole collection for any filter but _id.
  const seen = await deps.applied(connectionId);
  const stale = await deps.collection
    .find(
      {
        connectionId,
        removed: { $ne: true },
        updatedAt: { $not: { $gte: before } },
        seq: { $not: { $gt: seen.committed }, ...(seen.abandoned.length > 0 && { $nin: seen.abandoned }) },
      },
      { projection: { resourceId: 1, resourceType: 1 } },
    )
    .toArray();
  const wanted = new Set(types);
  const tombstones = stale
    .map((doc) => ({ type: doc.resourceType ?? 'Observation', id: doc.resourceId }))
    .filter(({ type }) => wanted.has(type))
    .map(({ type, id }) => ({ connectionId, accountId, ...tombstoneOf(type, id), sortDate: BEGINNING, updatedAt: at }));
  // An ingest may replace one of them between that read and the removal's commit: under the writer's lease (no other
  // bundle commits then), each is read again, once pending replacements are applied, and kept only if still stale.
  const stillStale = async (candidates: StoredFields[], renew: () => Promise<void>) => {
    await deps.applied(connectionId); // (applied before the lease was taken: only what committed in between)
    const docs = await readByIds(
      deps.collection,
      candidates.map((fields) => recordKey(connectionId, fields.resourceType, fields.resourceId)),
      renew,
    );
    return candidates.filter((_, i) => {
      const doc = docs[i];
      return doc != null && doc.removed !== true && !(doc.updatedAt !== undefined && doc.updatedAt >= before);
    });
  };
  for (let from = 0; from < tombstones.length; from += REMOVALS_PER_BUNDLE) {
    // The last bundle's replacements (seconds of the embedded database's time for 1,000) are applied before the next
    // takes the writer's lease: ingests of the connection do not wait behind them, nor does the check under the lease.
    await deps.applied(connectionId);
    const written = await deps.write(connectionId, tombstones.slice(from, from + REMOVALS_PER_BUNDLE), stillStale);
    const counts = new Map<string, number>();
    for (const fields of written?.written ?? []) {
      const type = fields.resourceType ?? 'Observation';
      counts.set(type, (counts.get(type) ?? 0) + 1);
      removed.set(type, (removed.get(type) ?? 0) + 1);
    }
    await onRemoved?.(counts);
  }
  return removed;
}

/** The documents of `ids` (null for one not there), read by _id alone (see bundle-writer.ts), a few at once. */
async function readByIds(
  collection: Collection<ObservationDocument>,
  ids: string[],
  /** Renews the writer's lease the reads are made under (every 256 reads). */
  renew: () => Promise<void>,
): Promise<(Pick<ObservationDocument, 'removed' | 'updatedAt'> | null)[]> {
  const docs: (Pick<ObservationDocument, 'removed' | 'updatedAt'> | null)[] = [];
  for (let from = 0; from < ids.length; from += READS_AT_ONCE) {
    if (from > 0 && from % (READS_AT_ONCE * 16) === 0) await renew();
    docs.push(
      ...(await Promise.all(
        ids
          .slice(from, from + READS_AT_ONCE)
          .map((_id) => collection.findOne({ _id }, { projection: { removed: 1, updatedAt: 1 } })),
      )),
    );
  }
  return docs;
}
