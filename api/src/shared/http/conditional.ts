// Entity tags and conditional requests (RFC 9110 §8.8.3, §13): weak comparison for If-None-Match on reads,
// strong comparison for If-Match on writes.
import type { Context, Middleware } from 'koa';
import { invalidField } from './errors.js';
import type { HeaderDoc, OperationPatch } from './openapi.js';

interface EntityTag {
  weak: boolean;
  opaque: string;
}

type TagList = '*' | EntityTag[];

const TAG = /^(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"$/;

/**
 * What parseTagList accepts (and an empty header, which is no header), for /openapi.json: its tokens written
 * as one expression without an inner `$`, which generators of matching strings cannot follow.
 */
const ONE_TAG = '(?:W/)?"[\\x21\\x23-\\x7e\\x80-\\xff]*"';
const TAG_LIST_PATTERN = `^\\s*(?:\\*|[\\s,]*${ONE_TAG}[ \\t]*(?:,[\\s,]*${ONE_TAG}[ \\t]*)*,?)?\\s*$`;

/** Parses `*` or a comma-separated list of entity tags; undefined when malformed. */
export function parseTagList(header: string): TagList | undefined {
  const trimmed = header.trim();
  if (trimmed === '*') return '*';
  // Tokenised, not split on commas: a comma is a legal character inside an opaque tag.
  const tags: EntityTag[] = [];
  const item = /[\s,]*(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"[ \t]*(,|$)/y;
  let match: RegExpExecArray | null;
  while (item.lastIndex < trimmed.length && (match = item.exec(trimmed)) !== null) {
    tags.push({ weak: match[1] !== undefined, opaque: match[2]! });
    if (match[3] === '') break;
  }
  return tags.length > 0 && item.lastIndex === trimmed.length ? tags : undefined;
}

export const IF_NONE_MATCH: HeaderDoc = {
  name: 'If-None-Match',
  description:
    'Entity tags of a cached copy (weak comparison) or `*`; when one matches the current representation the answer is 304 with no body. A malformed value is ignored.',
};

export const strongEtag = (version: string | number): string => `"${version}"`;

/** If-None-Match with weak comparison; a malformed header is ignored (the full response is sent). */
export function ifNoneMatchHits(ctx: Context, etag: string): boolean {
  return noneMatchHits(ctx.get('If-None-Match'), etag);
}

export function noneMatchHits(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  // What a client that revalidates sends: the very tag it was given (a list of that one tag, which matches).
  if (header === etag) return true;
  const list = parseTagList(header);
  if (list === undefined) return false;
  if (list === '*') return true;
  const current = TAG.exec(etag)?.[2];
  return list.some((tag) => tag.opaque === current);
}

/**
 * Answers a conditional GET: sets the representation's ETag (and any caching headers) and either a 304
 * with no body or the 200 body. The 304 repeats ETag, Cache-Control and Vary exactly as the 200 would.
 */
export function sendRepresentation(
  ctx: Context,
  etag: string,
  body: () => unknown,
  headers: Record<string, string> = {},
): void {
  const answer = representation(ctx.get('If-None-Match'), etag, body, headers);
  ctx.set(answer.headers);
  ctx.status = answer.status;
  ctx.body = answer.status === 304 ? null : answer.body;
}

/** A conditional GET's answer, for Koa (sendRepresentation) and node:http fast paths alike. */
export interface Representation {
  status: 200 | 304;
  headers: Record<string, string>;
  /** The 200's body (built only then). */
  body?: unknown;
}

export function representation(
  ifNoneMatch: string | undefined,
  etag: string,
  body: () => unknown,
  headers: Record<string, string> = {},
): Representation {
  const all = { ETag: etag, ...headers };
  if (noneMatchHits(ifNoneMatch, etag)) return { status: 304, headers: all };
  return { status: 200, headers: all, body: body() };
}

/** The parsed If-Match precondition: any current version (`*`), or a set of strong versions. */
export type Precondition = { kind: 'any' } | { kind: 'versions'; versions: string[] };

/** Strong comparison: a weak validator never matches. */
export function preconditionHolds(precondition: Precondition | undefined, currentVersion: string): boolean {
  if (precondition === undefined || precondition.kind === 'any') return true;
  return precondition.versions.includes(currentVersion);
}

/** Reads If-Match once per request (400 when malformed) and documents it. */
export function ifMatch(): Middleware & { openapi: OperationPatch } {
  const middleware = async function ifMatchMiddleware(ctx: Context, next: () => Promise<unknown>) {
    const header = ctx.get('If-Match');
    if (header !== '') {
      const list = parseTagList(header);
      if (list === undefined) throw invalidField('header', 'If-Match', 'must be * or a list of entity tags');
      ctx.state.precondition = (
        list === '*'
          ? { kind: 'any' }
          : { kind: 'versions', versions: list.filter((t) => !t.weak).map((t) => t.opaque) }
      ) satisfies Precondition;
    }
    await next();
  } as Middleware & { openapi: OperationPatch };
  middleware.openapi = {
    requestHeaders: [
      {
        name: 'If-Match',
        schema: { type: 'string', pattern: TAG_LIST_PATTERN },
        description:
          'Optional precondition, strong comparison: the operation runs only if the current `_version` tag matches one of the listed tags (or `*`); otherwise 412 and nothing changes. Weak tags never match. Malformed → 400.',
      },
    ],
  };
  return middleware;
}

export const preconditionOf = (ctx: Context): Precondition | undefined =>
  ctx.state.precondition as Precondition | undefined;
