// Idempotency-Key (CONTRACT §4): one execution per (credential, key); executed outcomes are replayed
// byte-for-byte for 24 hours. Requests rejected before execution are not stored, so they can be retried.
import { createHash, randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import type { Clock } from '../clock.js';
import { AppError, invalidField } from './errors.js';
import type { IdempotencyStore, StoredResponse } from './idempotency-store.js';
import type { OperationPatch } from './openapi.js';
import { principalOf } from './auth.js';
import { renderProblem, toAppError } from './problem-middleware.js';

export const REPLAY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** How long a crashed execution can block its key before another attempt may claim it. */
const RUNNING_TTL_MS = 60 * 1000;
const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;
/** Outcomes that the operation decided and that a retry would see again. */
const STORED_ERROR_STATUSES = new Set([404, 409, 412]);
const REPLAYED_HEADERS = ['ETag', 'Location', 'Content-Type'];

function readKey(ctx: Context): string | undefined {
  const values = ctx.req.headersDistinct['idempotency-key'];
  if (values === undefined) return undefined;
  if (values.length > 1) throw invalidField('header', 'Idempotency-Key', 'must be sent once');
  let key = values[0]!;
  if (key.length >= 2 && key.startsWith('"') && key.endsWith('"')) key = key.slice(1, -1);
  if (!KEY_SHAPE.test(key)) throw invalidField('header', 'Idempotency-Key', 'must be 1-255 visible ASCII characters');
  return key;
}

export function createIdempotency(store: IdempotencyStore, clock: Clock) {
  return function idempotent(): Middleware & { openapi: OperationPatch } {
    const middleware = async function idempotentMiddleware(ctx: Context, next: () => Promise<unknown>) {
      const key = readKey(ctx);
      if (key === undefined) return next();

      const scope = createHash('sha256').update(`${principalOf(ctx).keyId}\n${key}`).digest('hex');
      const fingerprint = createHash('sha256')
        .update([ctx.method, ctx.path, ctx.state.bodySha256 ?? '', ctx.get('If-Match')].join('\n'))
        .digest('hex');
      const owner = randomUUID();
      const now = clock.now().getTime();
      const existing = await store.claim(scope, { state: 'running', fingerprint, owner, expiresAt: now + RUNNING_TTL_MS }, now);
      if (existing) {
        if (existing.fingerprint !== fingerprint) {
          throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used for a different request.');
        }
        if (existing.state === 'running') {
          throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still executing.', {}, { 'Retry-After': '1' });
        }
        replay(ctx, existing.response);
        return;
      }

      try {
        await next();
      } catch (error) {
        const decided = toAppError(error);
        if (!decided || !STORED_ERROR_STATUSES.has(decided.status) || decided.code === 'IDEMPOTENCY_KEY_IN_USE') {
          await store.release(scope, owner);
          throw error;
        }
        renderProblem(ctx, decided);
      }

      if (ctx.status >= 500 || (ctx.status >= 300 && !STORED_ERROR_STATUSES.has(ctx.status))) {
        await store.release(scope, owner);
        return;
      }
      const body = ctx.body == null ? null : typeof ctx.body === 'string' ? ctx.body : JSON.stringify(ctx.body);
      if (body !== null) ctx.body = body; // what is sent is exactly what is stored
      const headers: Record<string, string> = {};
      for (const name of REPLAYED_HEADERS) {
        const value = ctx.response.get(name);
        if (value) headers[name] = String(value);
      }
      const response: StoredResponse = { status: ctx.status, body, headers };
      await store.complete(scope, { state: 'done', fingerprint, response, expiresAt: clock.now().getTime() + REPLAY_WINDOW_MS }, clock.now().getTime());
    } as Middleware & { openapi: OperationPatch };
    middleware.openapi = {
      requestHeaders: [
        {
          name: 'Idempotency-Key',
          description:
            'Optional, 1-255 visible ASCII characters (surrounding double quotes are removed). One execution per (credential, key); the outcome (2xx, 404, 409, 412) is replayed byte-for-byte for 24 hours with `Idempotent-Replayed: true`. Same key with a different method, path, body or If-Match → 422; while the first request runs → 409 with `Retry-After: 1`.',
        },
      ],
    };
    return middleware;
  };
}

function replay(ctx: Context, response: StoredResponse): void {
  ctx.status = response.status;
  for (const [name, value] of Object.entries(response.headers)) ctx.set(name, value);
  ctx.set('Idempotent-Replayed', 'true');
  if (response.body !== null) {
    ctx.body = response.body;
    if (response.headers['Content-Type']) ctx.type = response.headers['Content-Type'];
  }
}
