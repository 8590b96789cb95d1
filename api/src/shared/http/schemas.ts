// Shapes shared by several features: problem details, links, timestamps, identifiers.
import { Type, type TString } from '@sinclair/typebox';
import { explainedFormat } from '#core/schema.js';
import { MAX_LISTED_ERRORS } from './errors.js';

export const Timestamp = Type.String({
  format: 'date-time',
  description: 'ISO 8601 UTC with milliseconds.',
  examples: ['2026-11-22T10:00:00.000Z'],
});
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
export const Version = Type.String({
  pattern: '^[1-9][0-9]*$',
  description: 'Resource version: "1" at creation, +1 on every change. The entity tag is `"<_version>"`.',
});
export const Links = Type.Object({ self: Type.Object({ href: Type.String() }) });
/** The page size of the platform's keyset lists. */
export const PageLimit = Type.Integer({
  minimum: 1,
  maximum: 100,
  default: 25,
  description: 'Page size, 1-100 in decimal digits; anything else is 400 (never clamped).',
});

/** A path identifier: any string, so that a malformed id gets the operation's own answer, not a 400. */
export const IdParams = Type.Object({ id: Type.String() });

export const Problem = Type.Object(
  {
    type: Type.String({ format: 'uri' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    instance: Type.String(),
    code: Type.String(),
    details: Type.Object(
      {
        errors: Type.Optional(
          Type.Array(
            Type.Object({
              in: Type.Union([
                Type.Literal('body'),
                Type.Literal('query'),
                Type.Literal('path'),
                Type.Literal('header'),
              ]),
              name: Type.String({ description: 'The field, as a dotted path (`""` for the value as a whole).' }),
              detail: Type.String(),
            }),
            {
              description: `400 \`BAD_REQUEST\`: what is wrong, field by field; at most ${MAX_LISTED_ERRORS} listed (100 for clinical ingest).`,
            },
          ),
        ),
        errorsOmitted: Type.Optional(
          Type.Integer({
            minimum: 1,
            description: 'Present when `errors` was cut short: how many more problems were found and not listed.',
          }),
        ),
      },
      {
        additionalProperties: true,
        description: 'Machine-readable specifics of the problem; `{}` when there are none.',
      },
    ),
    retryable: Type.Boolean(),
  },
  { description: 'Problem details (RFC 9457); every field is always present.' },
);

// Free text people type (names, descriptions). Refused anywhere in it: control characters (Cc: C0, DEL and
// the C1 range U+0080-U+009F), line and paragraph separators (Zl, Zp), lone surrogates (Cs: not text at all,
// and not encodable as UTF-8) and format characters (Cf): zero-width spaces, bidirectional overrides and
// isolates (U+202A-U+202E, U+2066-U+2069, the "Trojan Source" characters), the soft hyphen, the byte order
// mark, tag characters. They are invisible: they make one name look like another, reorder the text shown
// beside it, or smuggle text past a reader. Two format characters stay because real names need them: ZERO
// WIDTH NON-JOINER (U+200C; Persian and Indic spellings) and ZERO WIDTH JOINER (U+200D; Indic conjuncts and
// emoji sequences such as 👩‍⚕️). Emoji variation selectors and skin tones are not format characters and pass.
// Patterns are ECMA-262 with the u flag, so \p{…} names Unicode categories; as other JSON Schema tools cannot
// read those (Schemathesis' Python regular expressions), the rule is a format of its own: `text` and, for
// required text, `text-not-blank`, described in words in the OpenAPI document.
const KEPT_FORMAT = '\\u200C\\u200D';
const CHARACTER = `(?:[^\\p{Cc}\\p{Cf}\\p{Cs}\\p{Zl}\\p{Zp}]|[${KEPT_FORMAT}])`;
const REFUSED_CHARACTERS =
  'control characters, invisible format characters (zero-width, bidirectional or tag characters), line separators or unpaired surrogates';
const NO_CONTROL = explainedFormat('text', `^${CHARACTER}*$`, `must not contain ${REFUSED_CHARACTERS}`);
// Required text must also show something: not only spaces and joiners. A lookahead keeps the pattern linear
// in the length of the value (ajv applies it even when maxLength has already failed).
const NOT_BLANK = explainedFormat(
  'text-not-blank',
  `^(?![\\s${KEPT_FORMAT}]*$)${CHARACTER}*$`,
  `must not be blank, nor contain ${REFUSED_CHARACTERS}`,
);

/** Free text (names, descriptions) without invisible or control characters; when required (minLength > 0) also not
 * blank. */
export const Text = (minLength: number, maxLength: number, extra: Record<string, unknown> = {}): TString =>
  Type.String({ minLength, maxLength, format: minLength > 0 ? NOT_BLANK : NO_CONTROL, ...extra });
