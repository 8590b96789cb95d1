// Opaque keyset cursors: base64url(JSON payload) + "." + base64url(HMAC-SHA256). The payload is bound to
// the route and the customer account, so a cursor cannot be replayed elsewhere or forged.
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { invalidField } from './errors.js';

/** The syntax of every cursor (payload "." signature, both base64url), for schemas. */
export const CURSOR_PATTERN = '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$';

export interface CursorBinding {
  route: string;
  accountId: string;
}

export class CursorCodec {
  /** Prepared once: every page of a search signs two cursors. */
  private readonly key: KeyObject;

  constructor(secret: string) {
    this.key = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  encode(binding: CursorBinding, position: Record<string, string>): string {
    return this.seal({ r: binding.route, a: binding.accountId, p: position });
  }

  /** The position inside a cursor issued for this binding; 400 for anything else (or longer than `maxLength`). */
  decode(binding: CursorBinding, cursor: string, maxLength = 1024): Record<string, string> {
    const rejected = invalidField('query', 'cursor', 'is not a cursor issued for this list');
    const { r, a, p } = this.open(cursor, maxLength, rejected);
    if (r !== binding.route || a !== binding.accountId || typeof p !== 'object' || p === null) throw rejected;
    const position = p as Record<string, unknown>;
    if (!Object.values(position).every((v) => typeof v === 'string')) throw rejected;
    return position as Record<string, string>;
  }

  /** A keyset list's cursor: the position (creation time and id) its page ended at. */
  encodePosition(binding: CursorBinding, position: { createdAt: Date; id: string }): string {
    return this.encode(binding, { c: position.createdAt.toISOString(), i: position.id });
  }

  /** The position inside a keyset list's cursor from encodePosition; 400 for anything else. */
  decodePosition(binding: CursorBinding, cursor: string): { createdAt: Date; id: string } {
    const position = this.decode(binding, cursor);
    const createdAt = new Date(position.c ?? '');
    if (Number.isNaN(createdAt.getTime()) || !position.i)
      throw invalidField('query', 'cursor', 'is not a cursor issued for this list');
    return { createdAt, id: position.i };
  }

  /** A cursor carrying any JSON value (a search's whole state), bound like the rest. */
  encodeData(binding: CursorBinding, data: unknown): string {
    return this.seal({ r: binding.route, a: binding.accountId, d: data });
  }

  /** The value inside a cursor from encodeData for this binding; 400 for anything else. */
  decodeData(binding: CursorBinding, cursor: string, maxLength: number): unknown {
    const rejected = invalidField('query', 'cursor', 'is not a cursor issued for this search');
    const { r, a, d } = this.open(cursor, maxLength, rejected);
    if (r !== binding.route || a !== binding.accountId || d === undefined) throw rejected;
    return d;
  }

  private seal(content: Record<string, unknown>): string {
    const payload = Buffer.from(JSON.stringify(content)).toString('base64url');
    return `${payload}.${this.sign(payload)}`;
  }

  /** The signed content of a cursor; `rejected` for a malformed, oversized or forged one. */
  private open(
    cursor: string,
    maxLength: number,
    rejected: Error,
  ): { r?: unknown; a?: unknown; p?: unknown; d?: unknown } {
    const [payload, signature, extra] = cursor.split('.');
    if (!payload || !signature || extra !== undefined || cursor.length > maxLength) throw rejected;
    const expected = Buffer.from(this.sign(payload));
    const presented = Buffer.from(signature);
    if (expected.length !== presented.length || !timingSafeEqual(expected, presented)) throw rejected;
    try {
      return (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) ?? {}) as {
        r?: unknown;
        a?: unknown;
        p?: unknown;
        d?: unknown;
      };
    } catch {
      throw rejected;
    }
  }

  private sign(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }
}
