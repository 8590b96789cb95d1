// Idempotency-Key (CONTRACT §4): one execution per (credential, key); executed outcomes are replayed
// byte-for-byte for 24 hours. Requests rejected before execution are not stored, so they can be retried.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import type { Clock } from '../../../core/src/clock.js';
import { AppError, invalidField } from './errors.js';
import type { IdempotencyStore } from './idempotency-store.js';
import type { OperationPatch } from './openapi.js';
import { principalOf } from './auth.js';
import { renderProblem, toAppError } from './problem-middleware.js';

export const REPLAY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** How long a crashed execution can block its key before another attempt may claim it. */
const RUNNING_TTL_MS = 60 * 1000;
const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;
/** Outcomes that the operation decided and that a retry would see again. */
const STORED_ERROR_STATUSES = new Set([404, 409, 412]);
const REPLAYED_HEADERS = ['ETag', 'Location', 'Content-Type', 'Cache-Control', 'Vary'];

interface StoredResponse {
  status: number;
  body: string | null;
  headers: Record<string, string>;
}

/**
 * Stored outcomes hold secrets (issued keys, webhook signing secrets, patient data), so they are sealed
 * with AES-256-GCM under a key derived from the server secret, the credential and the raw Idempotency-Key:
 * the store alone cannot read them, and only the same request can.
 */
function sealingKey(serverSecret: string, keyId: string, idempotencyKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', serverSecret, keyId, `portico-idempotency\n${idempotencyKey}`, 32));
}

function seal(key: Buffer, response: StoredResponse): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(response), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64');
}

function unseal(key: Buffer, sealed: string): StoredResponse {
  const raw = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as StoredResponse;
}

function readKey(ctx: Context): string | undefined {
  const values = ctx.req.headersDistinct['idempotency-key'];
  if (values === undefined) return undefined;
  if (values.length > 1) throw invalidField('header', 'Idempotency-Key', 'must be sent once');
  let key = values[0]!;
  if (key.length >= 2 && key.startsWith('"') && key.endsWith('"')) key = key.slice(1, -1);
  if (!KEY_SHAPE.test(key)) throw invalidField('header', 'Idempotency-Key', 'must be 1-255 visible ASCII characters');
  return key;
}

export function createIdempotency(store: IdempotencyStore, clock: Clock, serverSecret: string) {
  return function idempotent(): Middleware & { openapi: OperationPatch } {
    const middleware = async function idempotentMiddleware(ctx: Context, next: () => Promise<unknown>) {
      const key = readKey(ctx);
      if (key === undefined) return next();

      const { keyId } = principalOf(ctx);
      const scope = createHash('sha256').update(`${keyId}\n${key}`).digest('hex');
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
        replay(ctx, unseal(sealingKey(serverSecret, keyId, key), existing.sealed));
        return;
      }

      try {
        await next();
      } catch (error) {
        const decided = toAppError(error);
        if (!decided || !STORED_ERROR_STATUSES.has(decided.status) || decided.code === 'IDEMPOTENCY_KEY_IN_USE' || decided.options.storable === false) {
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
      const sealed = seal(sealingKey(serverSecret, keyId, key), { status: ctx.status, body, headers });
      const completedAt = clock.now().getTime();
      await store.complete(scope, owner, { state: 'done', fingerprint, sealed, expiresAt: completedAt + REPLAY_WINDOW_MS }, completedAt);
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
