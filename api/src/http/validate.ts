// validate({params, query, body}) reads and checks a request against TypeBox schemas. The same schemas give
// the handler its types (input.get(ctx)) and describe the operation in /openapi.json.
import { createHash } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import contentType from 'content-type';
import getRawBody from 'raw-body';
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { AppError, badRequest, type FieldError } from './errors.js';
import type { OperationPatch } from './openapi.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Bodies over this are refused with 413 before they are buffered whole. */
export const MAX_BODY_BYTES = 1024 * 1024;

const bodyAjv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true }));
const paramAjv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true, coerceTypes: true }));

export interface InputSchemas {
  params?: TObject;
  query?: TObject;
  body?: TSchema;
  /** Extra body media types besides application/json (PATCH takes application/merge-patch+json). */
  bodyMediaTypes?: string[];
}

export interface Input<S extends InputSchemas> {
  params: S['params'] extends TObject ? Static<S['params']> : Record<string, never>;
  query: S['query'] extends TObject ? Static<S['query']> : Record<string, never>;
  body: S['body'] extends TSchema ? Static<S['body']> : undefined;
}

export type ValidateMiddleware<S extends InputSchemas> = Middleware & {
  openapi: OperationPatch;
  /** The validated input of this request, typed by the schemas. */
  get(ctx: Context): Input<S>;
};

export function validate<S extends InputSchemas>(schemas: S): ValidateMiddleware<S> {
  const checkParams = schemas.params && paramAjv.compile(schemas.params);
  const checkQuery = schemas.query && paramAjv.compile(schemas.query);
  const checkBody = schemas.body && bodyAjv.compile(schemas.body);
  const integerQueryNames = Object.entries(schemas.query?.properties ?? {})
    .filter(([, schema]) => (schema as { type?: string }).type === 'integer')
    .map(([name]) => name);
  const queryNames = Object.keys(schemas.query?.properties ?? {});
  const mediaTypes = ['application/json', ...(schemas.bodyMediaTypes ?? [])];

  const middleware = async function validateMiddleware(ctx: Context, next: () => Promise<unknown>) {
    const errors: FieldError[] = [];
    const params = { ...ctx.params } as Record<string, unknown>;
    if (checkParams && !checkParams(params)) errors.push(...fieldErrors('path', checkParams));

    const query: Record<string, unknown> = {};
    for (const name of queryNames) {
      const value = ctx.query[name];
      if (value === undefined) continue;
      if (Array.isArray(value)) errors.push({ in: 'query', name, detail: 'must be given at most once' });
      else if (integerQueryNames.includes(name) && !/^[0-9]{1,9}$/.test(value)) {
        errors.push({ in: 'query', name, detail: 'must be an integer written in decimal digits' });
      } else query[name] = value;
    }
    if (checkQuery && errors.length === 0 && !checkQuery(query)) errors.push(...fieldErrors('query', checkQuery));

    let body: unknown;
    if (checkBody) {
      body = await readJsonBody(ctx, mediaTypes);
      if (body === undefined) errors.push({ in: 'body', name: '', detail: 'a JSON request body is required' });
      else if (!checkBody(body)) errors.push(...fieldErrors('body', checkBody));
    }

    if (errors.length > 0) {
      const first = errors[0]!;
      const where = first.in === 'path' ? 'path parameter' : first.in;
      throw badRequest(`Invalid ${where}${first.name ? ` "${first.name}"` : ''}: ${first.detail}.`, errors);
    }
    ctx.state.input = { params, query, body };
    await next();
  } as ValidateMiddleware<S>;

  middleware.get = (ctx) => ctx.state.input as Input<S>;
  middleware.openapi = {
    params: schemas.params,
    query: schemas.query,
    body: schemas.body,
    bodyMediaTypes: mediaTypes,
  };
  return middleware;
}

/** Checks a value against a schema outside HTTP (the command line); 400-style AppError when invalid. */
export function assertValid<T extends TSchema>(schema: T, value: unknown): Static<T> {
  const check = bodyAjv.compile(schema);
  if (!check(value)) {
    const errors = fieldErrors('body', check);
    throw badRequest(errors.map((e) => `${e.name || 'value'} ${e.detail}`).join('; '), errors);
  }
  return value as Static<T>;
}

/** Reads a JSON body, enforcing the media type and the size limit; undefined when there is no body. */
async function readJsonBody(ctx: Context, mediaTypes: string[]): Promise<unknown> {
  const declaredLength = ctx.request.length;
  const chunked = ctx.get('Transfer-Encoding') !== '';
  if (!chunked && (declaredLength === undefined || declaredLength === 0)) return undefined;
  let type: string;
  try {
    type = contentType.parse(ctx.req).type;
  } catch {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `The request body must be one of: ${mediaTypes.join(', ')}.`);
  }
  if (!mediaTypes.includes(type)) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `The request body must be one of: ${mediaTypes.join(', ')}.`);
  }
  if (declaredLength !== undefined && declaredLength > MAX_BODY_BYTES) {
    throw new AppError('PAYLOAD_TOO_LARGE', `The request body exceeds ${MAX_BODY_BYTES} bytes.`, { limitBytes: MAX_BODY_BYTES });
  }
  let raw: Buffer;
  try {
    raw = await getRawBody(ctx.req, { limit: MAX_BODY_BYTES, length: declaredLength });
  } catch (error) {
    // The rest of the body is never read, so the connection cannot carry another request.
    const close = { Connection: 'close' };
    if ((error as { type?: string }).type === 'entity.too.large') {
      throw new AppError('PAYLOAD_TOO_LARGE', `The request body exceeds ${MAX_BODY_BYTES} bytes.`, { limitBytes: MAX_BODY_BYTES }, close);
    }
    throw new AppError('BAD_REQUEST', 'The request body could not be read.', {}, close);
  }
  ctx.state.bodySha256 = createHash('sha256').update(raw).digest('hex');
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw badRequest('The request body is not valid JSON.', [{ in: 'body', name: '', detail: 'malformed JSON' }]);
  }
}

function fieldErrors(where: FieldError['in'], check: ValidateFunction): FieldError[] {
  return (check.errors ?? []).map((error) => fieldError(where, error));
}

function fieldError(where: FieldError['in'], error: ErrorObject): FieldError {
  const path = error.instancePath.split('/').slice(1).join('.');
  if (error.keyword === 'additionalProperties') {
    const extra = String(error.params.additionalProperty);
    return { in: where, name: path ? `${path}.${extra}` : extra, detail: 'is not an allowed property' };
  }
  if (error.keyword === 'required') {
    const missing = String(error.params.missingProperty);
    return { in: where, name: path ? `${path}.${missing}` : missing, detail: 'is required' };
  }
  return { in: where, name: path, detail: error.message ?? 'is invalid' };
}
