// validate({params, query, body}) reads and checks a request against TypeBox schemas. The same schemas give
// the handler its types (input.get(ctx)) and describe the operation in /openapi.json.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Context, Middleware } from 'koa';
import contentType from 'content-type';
import getRawBody from 'raw-body';
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import type { ValidateFunction } from 'ajv';
import { describeProblems, documentAjv, parameterAjv, schemaProblems } from '#core/schema.js';
import { AppError, badRequest, MAX_LISTED_ERRORS, type FieldError } from './errors.js';
import type { OperationPatch } from './openapi.js';

/** Bodies over this are refused with 413 before they are buffered whole. */
export const MAX_BODY_BYTES = 1024 * 1024;

export interface InputSchemas {
  params?: TObject;
  query?: TObject;
  body?: TSchema;
  /** Extra body media types besides application/json (PATCH takes application/merge-patch+json). */
  bodyMediaTypes?: string[];
  /** The body may be left out: then the handler's body is undefined (a body given is checked as usual). */
  bodyOptional?: boolean;
  /** The body's size limit (1 MiB unless a route says otherwise, e.g. 5 MiB for clinical ingest). */
  maxBodyBytes?: number;
}

export interface Input<S extends InputSchemas> {
  params: S['params'] extends TObject ? Static<S['params']> : Record<string, never>;
  query: S['query'] extends TObject ? Static<S['query']> : Record<string, never>;
  body: S['body'] extends TSchema
    ? S['bodyOptional'] extends true
      ? Static<S['body']> | undefined
      : Static<S['body']>
    : undefined;
}

export type ValidateMiddleware<S extends InputSchemas> = Middleware & {
  openapi: OperationPatch;
  /** The validated input of this request, typed by the schemas. */
  get(ctx: Context): Input<S>;
};

export function validate<S extends InputSchemas>(schemas: S): ValidateMiddleware<S> {
  const checkParams = schemas.params && parameterAjv.compile(schemas.params);
  const readQuery = schemas.query && queryReader(schemas.query);
  const checkBody = schemas.body && documentAjv.compile(schemas.body);
  const mediaTypes = ['application/json', ...(schemas.bodyMediaTypes ?? [])];

  const middleware = async function validateMiddleware(ctx: Context, next: () => Promise<unknown>) {
    const errors: FieldError[] = [];
    let omitted = 0;
    const params = { ...ctx.params } as Record<string, unknown>;
    if (checkParams && !checkParams(params)) omitted += addSchemaErrors(errors, 'path', checkParams);
    const query = readQuery ? readQuery(ctx.querystring, errors) : {};

    let body: unknown;
    if (checkBody) {
      body = await readJsonBody(ctx, mediaTypes, schemas.maxBodyBytes ?? MAX_BODY_BYTES);
      if (body === undefined) {
        if (!schemas.bodyOptional) errors.push({ in: 'body', name: '', detail: 'a JSON request body is required' });
      } else if (!checkBody(body)) omitted += addSchemaErrors(errors, 'body', checkBody);
    }

    throwIfAny(errors, omitted);
    ctx.state.input = { params, query, body };
    await next();
  } as ValidateMiddleware<S>;

  middleware.get = (ctx) => ctx.state.input as Input<S>;
  middleware.openapi = {
    params: schemas.params,
    query: schemas.query,
    body: schemas.body,
    bodyMediaTypes: mediaTypes,
    ...(schemas.bodyOptional && { bodyOptional: true }),
  };
  return middleware;
}

/**
 * Reads the parameters a query schema names from a raw query string (`a=1&b=2`, no `?`), the same way for
 * Koa routes and for handlers that run ahead of Koa: each at most once, integers in decimal digits, then
 * the schema (defaults filled in). Problems are added to `errors`; unknown parameters are ignored.
 */
export function queryReader<Q extends TObject>(schema: Q): (rawQuery: string, errors: FieldError[]) => Static<Q> {
  const check = parameterAjv.compile(schema);
  const names = Object.keys(schema.properties);
  const integers = new Set(names.filter((name) => (schema.properties[name] as { type?: string }).type === 'integer'));
  return (rawQuery, errors) => {
    const given = new URLSearchParams(rawQuery);
    const query: Record<string, unknown> = {};
    const before = errors.length;
    for (const name of names) {
      const values = given.getAll(name);
      if (values.length === 0) continue;
      if (values.length > 1) errors.push({ in: 'query', name, detail: 'must be given at most once' });
      else if (integers.has(name) && !/^[0-9]{1,9}$/.test(values[0]!))
        errors.push({ in: 'query', name, detail: 'must be an integer written in decimal digits' });
      else query[name] = values[0];
    }
    // A query schema's few parameters, each read once, bound its problems: all are passed on (badRequest caps).
    if (errors.length === before && !check(query)) addSchemaErrors(errors, 'query', check, Infinity);
    return query;
  };
}

/**
 * 400 naming the first problem in its detail and the problems in `details.errors` (the first
 * MAX_LISTED_ERRORS; `details.errorsOmitted` counts the rest and the `omitted` ones never described).
 */
export function throwIfAny(errors: FieldError[], omitted = 0): void {
  if (errors.length === 0) return;
  const first = errors[0]!;
  const where = first.in === 'path' ? 'path parameter' : first.in;
  throw badRequest(`Invalid ${where}${first.name ? ` "${first.name}"` : ''}: ${first.detail}.`, errors, { omitted });
}

/** Checks a value against a schema outside HTTP (the command line); 400-style AppError when invalid. */
export function assertValid<T extends TSchema>(schema: T, value: unknown): Static<T> {
  const check = documentAjv.compile(schema);
  if (!check(value)) {
    const errors: FieldError[] = [];
    const omitted = addSchemaErrors(errors, 'body', check);
    throw badRequest(
      describeProblems({ problems: errors.map((e) => ({ path: e.name, detail: e.detail })), omitted }),
      errors,
      { omitted },
    );
  }
  return value;
}

const rawBodies = new WeakMap<IncomingMessage, Promise<Buffer>>();

/**
 * The request's body, read once however many times it is asked for: a node:http fast path that reads a body
 * and then leaves the request to Koa hands Koa the same bytes (or the same read error).
 */
export function rawBodyOf(req: IncomingMessage, limit: number, length: number | undefined): Promise<Buffer> {
  let body = rawBodies.get(req);
  if (!body) rawBodies.set(req, (body = getRawBody(req, { limit, length })));
  return body;
}

/**
 * The length of a body a fast path may read and parse itself: one of `mediaTypes`, a Content-Length within
 * `limit` and no Transfer-Encoding; undefined for anything else (Koa's readJsonBody answers that).
 */
export function plainBodyLength(req: IncomingMessage, mediaTypes: string[], limit: number): number | undefined {
  const length = Number(req.headers['content-length']);
  if (req.headers['transfer-encoding'] !== undefined || !Number.isSafeInteger(length) || length <= 0 || length > limit)
    return undefined;
  try {
    return mediaTypes.includes(contentType.parse(req).type) ? length : undefined;
  } catch {
    return undefined;
  }
}

/** Reads a JSON body, enforcing the media type and the size limit; undefined when there is no body. */
async function readJsonBody(ctx: Context, mediaTypes: string[], limit: number): Promise<unknown> {
  const raw = await readBody(ctx, mediaTypes, limit);
  return raw === undefined ? undefined : parseJsonBody(raw);
}

/**
 * The request body's bytes when its media type is one of `mediaTypes` (else 415) and it is at most `limit` bytes
 * (else 413, before it is buffered whole when its length is declared); undefined when there is none.
 */
export async function readBody(ctx: Context, mediaTypes: string[], limit: number): Promise<Buffer | undefined> {
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
  if (declaredLength !== undefined && declaredLength > limit) {
    throw new AppError('PAYLOAD_TOO_LARGE', `The request body exceeds ${limit} bytes.`, { limitBytes: limit });
  }
  let raw: Buffer;
  try {
    raw = await rawBodyOf(ctx.req, limit, declaredLength);
  } catch (error) {
    // The rest of the body is never read, so the connection cannot carry another request.
    const close = { Connection: 'close' };
    if ((error as { type?: string }).type === 'entity.too.large') {
      throw new AppError('PAYLOAD_TOO_LARGE', `The request body exceeds ${limit} bytes.`, { limitBytes: limit }, close);
    }
    throw new AppError('BAD_REQUEST', 'The request body could not be read.', {}, close);
  }
  ctx.state.bodySha256 = createHash('sha256').update(raw).digest('hex');
  return raw;
}

// fatal: a malformed sequence is an error, not U+FFFD. ignoreBOM keeps a byte order mark in the text, where
// JSON.parse refuses it as it always has (RFC 8259 §8.1: JSON text is UTF-8 without one).
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * A JSON request body from its bytes: 400 when they are not UTF-8 (never silently rewritten to U+FFFD, so
 * what is stored is what the client sent) or not JSON. Koa's routes and the node:http fast paths both read
 * bodies through this, so a body one refuses the other refuses too.
 */
export function parseJsonBody(raw: Buffer): unknown {
  let text: string;
  try {
    text = UTF8.decode(raw);
  } catch {
    throw badRequest('The request body is not valid UTF-8.', [{ in: 'body', name: '', detail: 'malformed UTF-8' }]);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('The request body is not valid JSON.', [{ in: 'body', name: '', detail: 'malformed JSON' }]);
  }
  // UTF-8 cannot carry a lone surrogate, but a \u escape can ("\ud800"): JSON.parse keeps it, and it would be
  // stored as U+FFFD, not as sent. Only a body with such an escape is walked.
  if (SURROGATE_ESCAPE.test(text)) {
    const path = unpairedSurrogate(value);
    if (path !== undefined)
      throw badRequest('The request body holds a string with an unpaired UTF-16 surrogate; text must be Unicode.', [
        { in: 'body', name: path, detail: 'unpaired surrogate' },
      ]);
  }
  return value;
}

/** A \u escape of a surrogate code unit (D800–DFFF), either half. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * The path of a string (value or member name) in `value` that is not well-formed UTF-16, if any. Iterative,
 * and a path is only spelt out for the string found: a body may nest as deep as its size allows.
 */
function unpairedSurrogate(value: unknown): string | undefined {
  /** Where each visited container or member sits: its parent's entry and its key there. */
  const places: { parent: number; key: string | number }[] = [{ parent: -1, key: '' }];
  const pathOf = (place: number, name?: string): string => {
    const keys: (string | number)[] = name === undefined ? [] : [name];
    for (let at = place; at > 0; at = places[at]!.parent) keys.push(places[at]!.key);
    return keys
      .reverse()
      .reduce<string>(
        (path, key) => (typeof key === 'number' ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`),
        '',
      );
  };
  const pending: [unknown, number][] = [[value, 0]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [item, place] = next;
    if (typeof item === 'string') {
      if (!item.isWellFormed()) return pathOf(place);
    } else if (Array.isArray(item)) {
      item.forEach((member, i) => pending.push([member, places.push({ parent: place, key: i }) - 1]));
    } else if (item !== null && typeof item === 'object') {
      for (const [name, member] of Object.entries(item)) {
        if (!name.isWellFormed()) return pathOf(place, name);
        pending.push([member, places.push({ parent: place, key: name }) - 1]);
      }
    }
  }
  return undefined;
}

/** Adds what a failed check found to `errors` (at most `limit` described); returns how many it left out. */
export function addSchemaErrors(
  errors: FieldError[],
  where: FieldError['in'],
  check: ValidateFunction,
  limit = MAX_LISTED_ERRORS,
): number {
  const { problems, omitted } = schemaProblems(check, limit);
  for (const { path, detail } of problems) errors.push({ in: where, name: path, detail });
  return omitted;
}
