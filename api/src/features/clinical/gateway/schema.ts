import { Type, type Static } from '@sinclair/typebox';
import { CURSOR_PATTERN } from '../../../shared/http/cursor.js';

export const SearchBody = Type.Object(
  {
    connectionId: Type.String({ minLength: 1, maxLength: 64, description: 'The connection whose record is searched.' }),
    code: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        description: 'FHIR token: `system|code`, `code`, `|code` or `system|`; comma = OR.',
        examples: ['http://loinc.org|8867-4,http://loinc.org|85354-9'],
      }),
    ),
    category: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024, description: 'FHIR token, as `code`.', examples: ['vital-signs'] }),
    ),
    date: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 40 }), {
        minItems: 1,
        maxItems: 10,
        description: 'Prefixed FHIR dates, ANDed (`eq ne gt lt ge le`; partial dates are ranges).',
        examples: [['ge2024-01-01', 'lt2025']],
      }),
    ),
    _count: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Page size; 50 when absent.' })),
    _sort: Type.Optional(
      Type.Union([Type.Literal('date'), Type.Literal('-date')], {
        description: 'By effective date (start of its range), then id; `-date` (newest first) when absent.',
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 16384,
        pattern: CURSOR_PATTERN,
        description:
          'From a previous `next` link; it carries every other parameter, so only `connectionId` may accompany it.',
      }),
    ),
  },
  {
    additionalProperties: false,
    examples: [
      {
        connectionId: '0193a0c4-7b1e-7c1a-9d2e-3f4a5b6c7d8e',
        code: 'http://loinc.org|8867-4',
        date: ['ge2024-01-01'],
        _count: 50,
      },
    ],
  },
);
export type SearchBody = Static<typeof SearchBody>;

export const SearchQuery = Type.Object({
  cursor: Type.String({
    minLength: 1,
    maxLength: 16384,
    pattern: CURSOR_PATTERN,
    description: 'The cursor of a `next` link.',
  }),
});

const Link = Type.Object({
  relation: Type.Union([Type.Literal('self'), Type.Literal('next')]),
  url: Type.String({ format: 'uri' }),
});
export const SearchSet = Type.Object(
  {
    resourceType: Type.Literal('Bundle'),
    type: Type.Literal('searchset'),
    total: Type.Integer({
      minimum: 0,
      description: 'Every observation the caller may see that matches (not only this page).',
    }),
    link: Type.Array(Link),
    entry: Type.Array(
      Type.Object({
        fullUrl: Type.String({ format: 'uri' }),
        resource: Type.Object({ resourceType: Type.Literal('Observation') }, { additionalProperties: true }),
        search: Type.Object({ mode: Type.Literal('match') }),
      }),
    ),
  },
  { description: 'A FHIR R4 Bundle (application/fhir+json).' },
);
