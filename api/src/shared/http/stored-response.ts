// An idempotent request's outcome as stored and replayed (docs/api.md, "Rules every operation follows"): the
// response captured as it is sent, sealed so that only the same request can read it back, and replayed byte for
// byte with `Idempotent-Replayed: true`. idempotency.ts decides when.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import type { AppError } from './errors.js';
import { renderProblem } from './problem-middleware.js';

const REPLAYED_HEADERS = ['ETag', 'Location', 'Content-Type', 'Cache-Control', 'Vary'];

export interface StoredResponse {
  status: number;
  body: string | null;
  headers: Record<string, string>;
}

/**
 * Stored outcomes hold secrets (issued keys, webhook signing secrets, patient data), so they are sealed
 * with AES-256-GCM under a key derived from the server secret, the credential and the raw Idempotency-Key:
 * the store alone cannot read them, and only the same request can.
 */
export function sealingKey(serverSecret: string, keyId: string, idempotencyKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', serverSecret, keyId, `portico-idempotency\n${idempotencyKey}`, 32));
}

export function seal(key: Buffer, response: StoredResponse): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(response), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64');
}

export function unseal(key: Buffer, sealed: string): StoredResponse {
  const raw = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return JSON.parse(
    Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8'),
  ) as StoredResponse;
}

/** The response as it will be sent and stored (after rendering `problem`, when given). */
export function captureResponse(ctx: Context, problem?: AppError): StoredResponse {
  if (problem) renderProblem(ctx, problem);
  const body = ctx.body == null ? null : typeof ctx.body === 'string' ? ctx.body : JSON.stringify(ctx.body);
  if (body !== null) ctx.body = body; // what is sent is exactly what is stored
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = ctx.response.get(name);
    if (value) headers[name] = String(value);
  }
  return { status: ctx.status, body, headers };
}

export function replay(ctx: Context, response: StoredResponse): void {
  ctx.status = response.status;
  for (const [name, value] of Object.entries(response.headers)) ctx.set(name, value);
  ctx.set('Idempotent-Replayed', 'true');
  if (response.body !== null) {
    ctx.body = response.body;
    if (response.headers['Content-Type']) ctx.type = response.headers['Content-Type'];
  }
}
