// How an ingested Observation is stored: one document per resource in the `observations` collection, with
// the fields the gateway's search reads (docs/api.md, "Clinical records and the observation gateway") derived once at
// ingest.

export interface CodingIndex {
  /** `${system}|${code}`, or `|${code}` for a coding without a system. */
  tokens: string[];
  codes: string[];
  systems: string[];
}

export interface ObservationDocument {
  /** `${connectionId}/${resourceId}` */
  _id: string;
  /** The bundle generation that first wrote it (api/src/features/clinical/records/bundle-heads.ts); absent before generations.
   * */
  seq?: number;
  /** The generation whose version it holds (for diagnosis: replacements are ordered by the applier's lease). */
  rev?: number;
  connectionId: string;
  accountId: string;
  resourceId: string;
  code: CodingIndex;
  category: CodingIndex;
  /** The effective range, inclusive to the millisecond; an ongoing period ends at ONGOING; null without a date. */
  date: { start: Date; end: Date } | null;
  /** date.start, or BEGINNING when there is no date: what the search sorts and pages by. */
  sortDate: Date;
  /** v3-Confidentiality code U L M N R V (N without a label). */
  confidentiality: string;
  /** v3-ActCode sensitivity codes, [] when none. */
  sensitivity: string[];
  /** Set when first written, never changed by a replacement: a paging walk sees only what existed when it began. */
  firstIngestedAt: Date;
  resource: Record<string, unknown>;
}
