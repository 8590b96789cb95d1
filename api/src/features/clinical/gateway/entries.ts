// What a search of a connection's index returns: each record's position in the sort order and its searchset entry
// from just after the base of its fullUrl, as UTF-8 bytes built once and copied into every answer (connection-index.ts
// keeps them; the record search and the FHIR face answer with them); and what keeping one costs the index.
import type { ObservationDocument } from '../records/document.js';
import type { ObservationRow } from '../records/rows.js';
import { searchValues, type SearchValues } from '../search/values.js';

export interface Position {
  sortDate: number;
  id: string;
}

/** An observation (or any record) as a search returns it: its position in the sort order and its searchset entry. */
export interface IndexedObservation extends Position {
  resourceId: string;
  /** The resource type. */
  type: string;
  /** When this version was stored (epoch ms; when it was first written, for rows from before this was kept). */
  updatedAt: number;
  search: SearchValues;
  /** Its searchset entry after the base of its fullUrl, as UTF-8 (entryTail()): built once, copied into every answer.
   * */
  tail: Buffer;
}

/**
 * A searchset entry from just after the base of its fullUrl: `<id>","resource":<resource>,"search":{"mode":"match"}}`.
 * A FHIR id ([A-Za-z0-9.-]) needs no escaping in the quoted fullUrl.
 */
export function entryTail(resourceId: string, resource: unknown): Buffer {
  return tailOf(resourceId, JSON.stringify(resource));
}

export const RESOURCE_AT = '","resource":';
export const SEARCH_MODE = ',"search":{"mode":"match"}}';
const tailOf = (resourceId: string, resource: string) =>
  Buffer.from(`${resourceId}${RESOURCE_AT}${resource}${SEARCH_MODE}`);

/** A stored document as a search returns it (for a search of the database). */
export function entryOfDocument(doc: ObservationDocument): IndexedObservation {
  return {
    id: doc._id,
    resourceId: doc.resourceId,
    type: doc.resourceType ?? 'Observation',
    updatedAt: (doc.updatedAt ?? doc.firstIngestedAt).getTime(),
    search: doc.search ?? searchValues(doc.resource),
    sortDate: doc.sortDate.getTime(),
    tail: entryTail(doc.resourceId, doc.resource),
  };
}

const INCLUDE_MODE = Buffer.from(',"search":{"mode":"include"}}');
/** An entry's tail as an entry that `_include` or `_revinclude` brought in (search mode `include`). */
export const includedTail = (entry: IndexedObservation): Buffer =>
  Buffer.concat([entry.tail.subarray(0, entry.tail.length - SEARCH_MODE.length), INCLUDE_MODE]);

/** The resource's JSON text in an entry's tail (entryTail()). */
export const resourceOfTail = (entry: IndexedObservation): Buffer =>
  entry.tail.subarray(Buffer.byteLength(entry.resourceId) + RESOURCE_AT.length, entry.tail.length - SEARCH_MODE.length);

/**
 * What keeping an observation costs beside its entry bytes (ids, columns, postings, object headers; codings and label
 * sets are shared): measured at about 640 bytes for the benchmark's observations, 1,270 in all with their 550-byte
 * resources (`node --expose-gc dist/bench/gateway-index.js`); charged with some margin.
 */
const ENTRY_OVERHEAD_BYTES = 700;

/**
 * What keeping a row costs: its searchset entry's bytes, ENTRY_OVERHEAD_BYTES, and its search values (charged at
 * twice their JSON text: strings and small objects). A row read without its values gets them here (an Observation
 * stored before they were kept): search/values.ts from its resource.
 */
export const rowBytes = (row: ObservationRow) =>
  ENTRY_OVERHEAD_BYTES +
  row.resourceId.length +
  RESOURCE_AT.length +
  Buffer.byteLength(row.resource) +
  SEARCH_MODE.length +
  2 * JSON.stringify(valuesOf(row)).length;

/** A row's search values (derived once from its resource when it came without them). */
export function valuesOf(row: ObservationRow): SearchValues {
  return (row.search ??= searchValues(JSON.parse(row.resource) as Record<string, unknown>));
}
