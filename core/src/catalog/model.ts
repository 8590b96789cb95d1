// The catalog's data model, shared by the API (which serves snapshots) and the operator (which builds
// them). A brand is one FHIR system: brands are deduplicated by the normalised FHIR base URL.

export const PLATFORM_TYPES = [
  'EPIC',
  'CERNER',
  'ATHENAHEALTH',
  'MEDITECH',
  'NEXTGEN',
  'VERADIGM',
  'ALTERA',
  'ECLINICALWORKS',
  'PRACTICE_FUSION',
  'GREENWAY',
  'MODMED',
  'MEDHOST',
  'NETSMART',
  'OTHER',
] as const;
export type PlatformType = (typeof PLATFORM_TYPES)[number];

export const LOGO_SIZES = [64, 128, 256, 512] as const;
export type LogoSize = (typeof LOGO_SIZES)[number];

export const LOGO_FORMATS = ['png', 'webp'] as const;
export type LogoFormat = (typeof LOGO_FORMATS)[number];

/**
 * Pre-rendered artwork of a brand: one object-storage key (content-addressed) per catalog size. A size the
 * BrandCatalog does not render (`spec.logos.sizes`) maps to the nearest larger rendered one, else the largest.
 */
export interface BrandLogo {
  /** `rendered` from the brand's own logo; `favicon` from its portal's or FHIR host's favicon. */
  kind: 'rendered' | 'favicon';
  /** PNG renditions. */
  assets: Record<`${LogoSize}`, string>;
  /** WebP renditions; absent in snapshots written before WebP was rendered (the API then serves the PNG). */
  webp?: Record<`${LogoSize}`, string>;
}

export interface CatalogBrand {
  /** Opaque, URL-safe, ≤ 64 characters, derived from the FHIR system identity; stable across snapshots. */
  id: string;
  name: string;
  /** Other names of the same FHIR system (merged duplicates, affiliates, aliases given by sources). */
  aliases: string[];
  platformType: PlatformType;
  /** The normalised FHIR base URL (https, lower-case host, no default port, no trailing slash). */
  fhirBaseUrl: string;
  city: string | null;
  /** Two-letter US state (or territory) code. */
  state: string | null;
  portalUrl: string | null;
  logo: BrandLogo | null;
  /**
   * National Provider Identifiers the source rows of this FHIR system carried (Lantern's `NPIID`), valid
   * ones only (10 digits, Luhn with the 80840 prefix), distinct and sorted. Absent when none (and in
   * snapshots written before identifiers were kept).
   */
  npis?: string[];
  /** A 5-digit US ZIP code the sources gave for the brand (Lantern's `OrganizationZipCode`, a FHIR Organization's
   * address); absent when none. */
  postalCode?: string;
  /**
   * Where the brand is, for `near=` ordering: its ZIP code's centroid, else its city's (city and state), in
   * degrees. Absent when neither is known.
   */
  location?: BrandLocation;
}

export interface BrandLocation {
  lat: number;
  lon: number;
  /** What the point was derived from. */
  from: 'zip' | 'city';
}

/** The outcome of the operator's last check of a brand's FHIR endpoint (published beside the snapshot). */
export const ENDPOINT_STATUSES = ['UP', 'DEGRADED', 'DOWN', 'UNKNOWN'] as const;
export type EndpointStatus = (typeof ENDPOINT_STATUSES)[number];

export interface EndpointHealth {
  status: EndpointStatus;
  /** `fhirVersion` of the CapabilityStatement `GET <fhirBaseUrl>/metadata` returned; null when none was read. */
  fhirVersion: string | null;
  /** `GET <fhirBaseUrl>/.well-known/smart-configuration` returned a SMART configuration document. */
  smartConfiguration: boolean;
  /** When the outcome was last established; null when never checked. */
  checkedAt: string | null;
}
