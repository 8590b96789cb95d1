// A connection's observations as the gateway's index and the connection's checkpoints keep them (rows): the
// search fields as numbers and strings, and the resource as its JSON text, which the index copies into answers
// as it is and a checkpoint stores as it is. Rows come from stored documents (a read of the whole connection)
// or from bundle records (what each bundle committed after a checkpoint wrote), folded in commit order.
import type { CodingIndex, ObservationDocument } from './document.js';
import type { StoredFields } from './bundle-records.js';
import { searchValues, type SearchValues } from '../search/values.js';

export interface ObservationRow {
  /** recordKey(connectionId, resourceType, resourceId) (document.ts) */
  _id: string;
  /** Absent for an Observation. */
  resourceType?: string;
  /** Its search values; absent in an Observation stored before they were kept (derived when indexed). */
  search?: SearchValues;
  resourceId: string;
  /** Epoch milliseconds: what the search sorts and pages by (document.ts, `sortDate`). */
  sortDate: number;
  /** The effective range in epoch milliseconds, inclusive; null without a date. */
  date: { start: number; end: number } | null;
  code: CodingIndex;
  category: CodingIndex;
  confidentiality: string;
  sensitivity: string[];
  /** When the observation was first written (a replacement keeps it): a paging walk sees what existed at its start. */
  firstIngestedAt: number;
  /** When this version was stored (epoch ms); absent in rows of documents written before it was kept. */
  updatedAt?: number;
  /** The FHIR resource as JSON text. */
  resource: string;
  /** A tombstone (document.ts, `removed`): dropped wherever rows are folded or indexed. */
  removed?: true;
}

/** The row of one observation (its fields in one order, so equal rows serialise alike). */
export function observationRow(
  fields: Omit<StoredFields, 'updatedAt' | 'connectionId' | 'accountId'> & { _id: string; updatedAt?: Date },
  firstIngestedAt: number,
  resource: string = JSON.stringify(fields.resource),
): ObservationRow {
  return {
    _id: fields._id,
    ...(fields.resourceType !== undefined && { resourceType: fields.resourceType }),
    ...(fields.search !== undefined && { search: fields.search }),
    resourceId: fields.resourceId,
    sortDate: fields.sortDate.getTime(),
    date: fields.date && { start: fields.date.start.getTime(), end: fields.date.end.getTime() },
    code: fields.code,
    category: fields.category,
    confidentiality: fields.confidentiality,
    sensitivity: fields.sensitivity,
    firstIngestedAt,
    ...(fields.updatedAt !== undefined && { updatedAt: fields.updatedAt.getTime() }),
    resource,
    ...(fields.removed && { removed: true as const }),
  };
}

export const documentRow = (doc: ObservationDocument): ObservationRow =>
  observationRow(doc, doc.firstIngestedAt.getTime());

/** What one committed bundle wrote: its observations, and when it was written (the first write of the new ones). */
export interface CommittedBundle {
  gen: number;
  at: number;
  rows: ObservationRow[];
}

/**
 * The observations after `bundles` (in commit order) are laid over `base` (one row per observation), by _id: a
 * bundle's row replaces the row of the same _id and keeps when it was first written; a row new to the connection
 * was first written by its bundle; a tombstone leaves no row.
 */
export function foldBundles(
  base: Iterable<ObservationRow>,
  bundles: readonly CommittedBundle[],
): Map<string, ObservationRow> {
  const rows = new Map<string, ObservationRow>();
  for (const row of base) rows.set(row._id, row);
  for (const bundle of bundles)
    for (const row of bundle.rows)
      rows.set(row._id, { ...row, firstIngestedAt: rows.get(row._id)?.firstIngestedAt ?? bundle.at });
  return withoutTombstones(rows);
}

/** `rows` without the records full syncs removed (tombstones, document.ts). */
export function withoutTombstones(rows: Map<string, ObservationRow>): Map<string, ObservationRow> {
  for (const [id, row] of rows) if (row.removed) rows.delete(id);
  return rows;
}

/**
 * The row with its search values: an Observation stored before they were kept gets them here, once, when a checkpoint
 * is written (then every index loaded from the checkpoint has them, instead of computing them on each load).
 */
export function withSearchValues(row: ObservationRow): ObservationRow {
  return row.search !== undefined
    ? row
    : { ...row, search: searchValues(JSON.parse(row.resource) as Record<string, unknown>) };
}
