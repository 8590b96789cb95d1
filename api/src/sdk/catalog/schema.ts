import { Type } from '@sinclair/typebox';
import { LOGO_FORMATS, LOGO_SIZES, PLATFORM_TYPES, type LogoFormat } from '../../../../core/src/catalog/model.js';

/** A pattern matching any of `words` in any letter case (what the service's case-insensitive parse accepts). */
function anyCase(words: readonly string[]): string {
  const letters = (word: string) => [...word].map((c) => (/[A-Za-z]/.test(c) ? `[${c.toUpperCase()}${c.toLowerCase()}]` : c)).join('');
  return `^(?:${words.map(letters).join('|')})$`;
}

export const SearchQuery = Type.Object({
  q: Type.Optional(
    Type.String({
      maxLength: 200,
      description:
        'Words, each matched as a prefix of a word of the brand name, an alias, the city or the state (code or full name); case, diacritics and punctuation are ignored. Fewer than 2 characters after trimming → no results; over 200 characters → 400.',
    }),
  ),
  platform: Type.Optional(Type.String({ pattern: anyCase(PLATFORM_TYPES), description: `One EHR platform, case-insensitive: ${PLATFORM_TYPES.join(', ')}.` })),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'Maximum number of brands, 1-100.' }),
});

export const BrandParams = Type.Object({ brandId: Type.String({ description: 'A brand id from a search; any other string (unknown or malformed) is 404.' }) });
export const AssetParams = Type.Object({ key: Type.String({ maxLength: 512 }) });
export const LogoQuery = Type.Object({
  size: Type.Integer({ enum: [...LOGO_SIZES], default: 128, description: `Pixel size of the square artwork: ${LOGO_SIZES.join(', ')}.` }),
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
  aliases: Type.Array(Type.String(), { description: 'Other names of the same FHIR system (merged duplicates, affiliates).' }),
  platformType: Type.Union(PLATFORM_TYPES.map((p) => Type.Literal(p))),
  fhirBaseUrl: Type.String({ format: 'uri' }),
  city: Type.Union([Type.String(), Type.Null()]),
  state: Type.Union([Type.String(), Type.Null()], { description: 'Two-letter code.' }),
  portalUrl: Type.Union([Type.String({ format: 'uri' }), Type.Null()]),
  logoUrl: Type.Union([Type.String({ format: 'uri' }), Type.Null()], { description: 'Absolute URL of the logo operation; null when the snapshot has no artwork.' }),
});

export const SearchResponse = Type.Object({ brands: Type.Array(Brand), count: Type.Integer({ description: 'Number of brands in this response.' }) });
export const LookupResponse = Type.Object({ brand: Brand });
