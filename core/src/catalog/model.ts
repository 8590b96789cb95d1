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
}
