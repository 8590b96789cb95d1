// JSON Schema checks shared by both programs: one ajv (formats, defaults filled in) for request bodies in the
// API and BrandCatalog files in the operator, so a schema means the same thing wherever it is applied.
import type { Static, TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Bodies and documents: every error reported, defaults filled in, no type coercion. */
export const documentAjv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true }));
/** Path and query parameters, which arrive as text: the same, with "7" read as 7. */
export const parameterAjv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true, coerceTypes: true }));

/** One problem with a value: where (dotted path, "" for the value itself) and what. */
export interface SchemaProblem {
  path: string;
  detail: string;
}

export function schemaProblems(check: ValidateFunction): SchemaProblem[] {
  return (check.errors ?? []).map(problemOf);
}

function problemOf(error: ErrorObject): SchemaProblem {
  const path = error.instancePath.split('/').slice(1).join('.');
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
export function checkDocument<T extends TSchema>(schema: T, value: unknown): { ok: true; value: Static<T> } | { ok: false; problems: SchemaProblem[] } {
  const check = documentAjv.compile(schema);
  return check(value) ? { ok: true, value: value as Static<T> } : { ok: false, problems: schemaProblems(check) };
}

/** "spec.sources.0.url must match …; kind is required". */
export const describeProblems = (problems: SchemaProblem[]): string => problems.map((p) => `${p.path || 'value'} ${p.detail}`).join('; ');
