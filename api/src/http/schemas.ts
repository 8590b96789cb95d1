// Shapes shared by several features: problem details, links, timestamps, identifiers.
import { Type, type TString } from '@sinclair/typebox';

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds.', examples: ['2026-11-22T10:00:00.000Z'] });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
export const Version = Type.String({ pattern: '^[1-9][0-9]*$', description: 'Resource version: "1" at creation, +1 on every change. The entity tag is `"<_version>"`.' });
export const Links = Type.Object({ self: Type.Object({ href: Type.String() }) });

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
    details: Type.Object({}, { additionalProperties: true }),
    retryable: Type.Boolean(),
  },
  { description: 'Problem details (RFC 9457); every field is always present.' },
);

const NO_CONTROL = '^[^\\u0000-\\u001f\\u007f]*$';
const NOT_BLANK = '^[^\\u0000-\\u001f\\u007f]*[^\\s\\u0000-\\u001f\\u007f][^\\u0000-\\u001f\\u007f]*$';

/** Text without control characters; when required (minLength > 0) also not blank. */
export const Text = (minLength: number, maxLength: number, extra: Record<string, unknown> = {}): TString =>
  Type.String({ minLength, maxLength, pattern: minLength > 0 ? NOT_BLANK : NO_CONTROL, ...extra });
