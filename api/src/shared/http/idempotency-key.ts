// The Idempotency-Key header (docs/api.md, "Rules every operation follows"; idempotency.ts): what a key looks like,
// reading it from a request, and how /openapi.json describes it.
import type { Context } from 'koa';
import { invalidField } from './errors.js';
import type { HeaderDoc } from './openapi.js';

const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;
/** What readKey accepts, for /openapi.json: KEY_SHAPE, or KEY_SHAPE in double quotes (`""` is no key). */
const KEY_HEADER_PATTERN = `^(?!""$)(?:${KEY_SHAPE.source.slice(1, -1)}|"${KEY_SHAPE.source.slice(1, -1)}")$`;

export function readKey(ctx: Context): string | undefined {
  const values = ctx.req.headersDistinct['idempotency-key'];
  if (values === undefined) return undefined;
  if (values.length > 1) throw invalidField('header', 'Idempotency-Key', 'must be sent once');
  let key = values[0]!;
  if (key.length >= 2 && key.startsWith('"') && key.endsWith('"')) key = key.slice(1, -1);
  if (!KEY_SHAPE.test(key)) throw invalidField('header', 'Idempotency-Key', 'must be 1-255 visible ASCII characters');
  return key;
}

/** The header as /openapi.json documents it on every operation idempotent() guards. */
export function keyHeaderDoc(): HeaderDoc {
  return {
    name: 'Idempotency-Key',
    schema: { type: 'string', pattern: KEY_HEADER_PATTERN },
    description:
      'Optional, 1-255 visible ASCII characters (surrounding double quotes are removed). One execution per (credential, key), also across replicas and crashes; the outcome (2xx, 404, 409, 412) is replayed byte-for-byte for 24 hours with `Idempotent-Replayed: true`. Same key with a different method, path, body or If-Match → 422; while the first request runs → 409 `IDEMPOTENCY_KEY_IN_USE` with `Retry-After: 1`; when the first request executed but its response was lost (its server stopped, or it failed part-way after changing something) → 409 `IDEMPOTENCY_KEY_EXECUTED`, not retryable: read the resource instead.',
  };
}
