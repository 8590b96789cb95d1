// JSON Schema checks shared by both programs: one ajv (formats, defaults filled in) for request bodies in the
// API and BrandCatalog files in the operator, so a schema means the same thing wherever it is applied.
import type { Static, TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/**
 * Bodies and documents: every error found (so a client learns all it got wrong at once), defaults filled in,
 * no type coercion. Finding every error is linear in the value, like parsing it, and the body limit bounds
 * both; what a caller describes of them is capped (schemaProblems()).
 */
export const documentAjv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true }));
/**
 * The same checks for callers that only need a yes or no (a fast path that hands anything invalid on to the
 * route that reports it): ajv stops at the first problem instead of collecting them all.
 */
export const acceptAjv = addFormats(new Ajv({ allErrors: false, strict: false, useDefaults: true }));
/** Path and query parameters, which arrive as text: the same, with "7" read as 7. */
export const parameterAjv = addFormats(
  new Ajv({ allErrors: true, strict: false, useDefaults: true, coerceTypes: true }),
);

/** One problem with a value: where (dotted path, "" for the value itself) and what. */
export interface SchemaProblem {
  path: string;
  detail: string;
}

/** What a failed check found: the first `limit` problems described, and how many more there were. */
export interface SchemaProblems {
  problems: SchemaProblem[];
  omitted: number;
}

/** How many problems a check describes by default; the rest are only counted. */
export const MAX_DESCRIBED_PROBLEMS = 20;

export function schemaProblems(check: ValidateFunction, limit = MAX_DESCRIBED_PROBLEMS): SchemaProblems {
  const errors = check.errors ?? [];
  // Only what is shown is turned into text: the 90,000th unknown property costs nothing more than counting.
  return { problems: errors.slice(0, limit).map(problemOf), omitted: Math.max(0, errors.length - limit) };
}

/** What a pattern asks for, in words, by pattern (see explainPattern()). */
const PATTERN_MEANINGS = new Map<string, string>();
/** What a format asks for, in words, by format name (see explainedFormat()). */
const FORMAT_MEANINGS = new Map<string, string>();

/**
 * A string format of our own, known to every ajv here: values must match `pattern` (ECMA-262, u flag).
 * A format rather than a `pattern` where the pattern needs what other JSON Schema tools cannot read (Unicode
 * property escapes such as \p{Cf}): the OpenAPI document then names the rule, and says it in words.
 */
export function explainedFormat(name: string, pattern: string, meaning: string): string {
  const regex = new RegExp(pattern, 'u');
  return checkedFormat(name, (value) => regex.test(value), meaning);
}

/** A string format of our own decided by `valid` (a lookup no pattern can express: a ZIP code that exists). */
export function checkedFormat(name: string, valid: (value: string) => boolean, meaning: string): string {
  for (const ajv of [documentAjv, acceptAjv, parameterAjv]) ajv.addFormat(name, { type: 'string', validate: valid });
  FORMAT_MEANINGS.set(name, meaning);
  return name;
}

/**
 * Gives a pattern a meaning that problems state instead of the pattern itself ("must match pattern
 * ^(?![\\s…" tells a client nothing); returns the pattern, for the schema.
 */
export function explainPattern(pattern: string, meaning: string): string {
  PATTERN_MEANINGS.set(pattern, meaning);
  return pattern;
}

function problemOf(error: ErrorObject): SchemaProblem {
  const path = error.instancePath.split('/').slice(1).join('.');
  const meaning =
    error.keyword === 'pattern'
      ? PATTERN_MEANINGS.get(String(error.params.pattern))
      : error.keyword === 'format'
        ? FORMAT_MEANINGS.get(String(error.params.format))
        : undefined;
  if (meaning !== undefined) return { path, detail: meaning };
  if (error.keyword === 'additionalProperties') {
    const extra = String(error.params.additionalProperty);
    return { path: path ? `${path}.${extra}` : extra, detail: 'is not an allowed property' };
  }
  if (error.keyword === 'required') {
    const missing = String(error.params.missingProperty);
    return { path: path ? `${path}.${missing}` : missing, detail: 'is required' };
  }
  return { path, detail: error.message ?? 'is invalid' };
}

/** Checks a value (filling in defaults); returns it typed, or the problems found. */
export function checkDocument<T extends TSchema>(
  schema: T,
  value: unknown,
): { ok: true; value: Static<T> } | ({ ok: false } & SchemaProblems) {
  const check = documentAjv.compile(schema);
  return check(value) ? { ok: true, value: value as Static<T> } : { ok: false, ...schemaProblems(check) };
}

/** "spec.sources.0.url must match …; kind is required" (and "; 3 more problems" past the cap). */
export const describeProblems = ({ problems, omitted }: SchemaProblems): string =>
  [
    ...problems.map((p) => `${p.path || 'value'} ${p.detail}`),
    ...(omitted > 0 ? [`${omitted} more problem${omitted === 1 ? '' : 's'}`] : []),
  ].join('; ');
