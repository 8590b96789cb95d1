// What every source format parses into, before normalisation and deduplication.
import type { PlatformType } from '#core/catalog/model.js';

export { SOURCE_FORMATS, type SourceFormat } from '../shared/catalog-spec.js';

/** One brand/endpoint pair as a source states it (not yet normalised). */
export interface SourceRow {
  name: string;
  fhirBaseUrl: string;
  platformType?: PlatformType;
  aliases?: string[];
  city?: string;
  /** Two-letter code or full name, as the source wrote it. */
  state?: string;
  portalUrl?: string;
  /** `https:` or `data:` URL of the brand's artwork. */
  logoUrl?: string;
  /** National Provider Identifiers the source gave the organisation: valid ones only, distinct, in source order. */
  npis?: string[];
  /** The organisation's 5-digit US ZIP code (a ZIP+4 reduced), only when it is a known ZIP code. */
  postalCode?: string;
}

export interface ParsedSource {
  rows: SourceRow[];
  /** Rows skipped because they had no usable absolute http(s) FHIR base URL or no name. */
  rejected: number;
  /** A few reasons for rejections, for status messages. */
  rejections: string[];
}

/** A source as the pipeline receives it: parsed rows plus how the BrandCatalog ranks and labels them. */
export interface LoadedSource {
  name: string;
  /** Lower number wins when duplicates are merged (default 100). */
  priority: number;
  /** For rows that carry no platform type. */
  platformType: PlatformType;
  parsed: ParsedSource;
}
