// How a record is stored: one document per resource in the `observations` collection (named before the other record
// types came), with the fields searches read (docs/api.md, "Clinical records and the observation gateway" and "The
// whole record") derived once at ingest: every type's search values (search/values.ts), and Observation's own
// columns, which the observation gateway's search reads.
import type { SearchValues } from '../search/values.js';

export interface CodingIndex {
  /** `${system}|${code}`, or `|${code}` for a coding without a system. */
  tokens: string[];
  codes: string[];
  systems: string[];
}

/**
 * A record's _id: `<connection>/<Observation.id>` for an Observation (as before other types were kept: no
 * migration), `<connection>/<type>/<id>` for any other type. FHIR ids hold no `/`, so the two never meet.
 */
export const recordKey = (connectionId: string, resourceType: string | undefined, resourceId: string): string =>
  resourceType === undefined || resourceType === 'Observation'
    ? `${connectionId}/${resourceId}`
    : `${connectionId}/${resourceType}/${resourceId}`;

export interface ObservationDocument {
  /** recordKey(connectionId, resourceType, resourceId) */
  _id: string;
  /** The resource type; absent for an Observation (as documents were before other types were kept). */
  resourceType?: string;
  /** Its search values (search/values.ts); absent in an Observation stored before they were kept: then derived when
   * read. */
  search?: SearchValues;
  /** The bundle generation that first wrote it (api/src/features/clinical/records/bundle-heads.ts); absent before generations.
   * */
  seq?: number;
  /** The generation whose version it holds (for diagnosis: replacements are ordered by the applier's lease). */
  rev?: number;
  connectionId: string;
  accountId: string;
  resourceId: string;
  /** The `code` and `category` tokens (for an Observation; empty for other types, which search by `search`). */
  code: CodingIndex;
  category: CodingIndex;
  /** The clinical date's range (record-types.ts; an Observation's effective range), inclusive to the millisecond; an ongoing period ends at ONGOING; null without a date. */
  date: { start: Date; end: Date } | null;
  /** date.start, or BEGINNING when there is no date: what the search sorts and pages by. */
  sortDate: Date;
  /** v3-Confidentiality code U L M N R V (N without a label). */
  confidentiality: string;
  /** v3-ActCode sensitivity codes, [] when none. */
  sensitivity: string[];
  /** When this version was stored (`_lastUpdated`); absent in documents written before it was kept. */
  updatedAt?: Date;
  /** Set when first written, never changed by a replacement: a paging walk sees only what existed when it began. */
  firstIngestedAt: Date;
  resource: Record<string, unknown>;
  /**
   * Set on a record a full sync removed (the health system no longer returns it): a tombstone, written as a
   * replacement so that bundles, checkpoints and indexes carry the removal as they carry any change, and that no
   * reader shows. A later write of the same type and id replaces it.
   */
  removed?: true;
}

/** The fields of what a full sync writes in place of a record it removes (`removed`). */
export function tombstoneOf(resourceType: string, resourceId: string) {
  return {
    ...(resourceType !== 'Observation' && { resourceType }),
    resourceId,
    code: { tokens: [], codes: [], systems: [] },
    category: { tokens: [], codes: [], systems: [] },
    date: null,
    confidentiality: 'N',
    sensitivity: [],
    resource: { resourceType, id: resourceId },
    removed: true as const,
  };
}
