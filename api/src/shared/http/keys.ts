// Opaque credentials: a kind prefix and 40 base62 characters (≈238 bits) from the CSPRNG. Only their
// SHA-256 is stored; with this much entropy a slow hash adds nothing and would cost every request.
import { hash, randomBytes } from 'node:crypto';

export type KeyKind = 'sk' | 'pk' | 'ak';

/** A key as stored (by the hash of its value) and as authentication reads it. */
export interface ApiKeyRecord {
  keyId: string;
  kind: KeyKind;
  accountId: string;
  appId: string | null;
  name: string | null;
  scopes: string[];
  createdAt: Date;
  revokedAt: Date | null;
}

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 40;
export const KEY_SHAPE = /^(sk|pk|ak)_[0-9A-Za-z]{32,128}$/;

export function generateKey(kind: KeyKind): string {
  return `${kind}_${randomBase62(BODY_LENGTH)}`;
}

/** `length` base62 characters from the CSPRNG (each ≈5.95 bits): the body of every opaque secret Portico issues. */
export function randomBase62(length: number): string {
  let body = '';
  while (body.length < length) {
    for (const byte of randomBytes(64)) {
      // Rejection sampling keeps every character equally likely (248 = 4 × 62).
      if (byte < 248 && body.length < length) body += ALPHABET[byte % 62];
    }
  }
  return body;
}

// On every authenticated request: crypto.hash, one call without a Hash object, takes under half of createHash()'s time.
export const hashKey = (key: string): string => hash('sha256', key, 'hex');

export const kindOf = (key: string): KeyKind | undefined =>
  KEY_SHAPE.test(key) ? (key.slice(0, 2) as KeyKind) : undefined;

/**
 * How long a replica may keep a key's record cached. Every revocation is announced over Redis when it is
 * configured; a revocation made where no Redis carries it (the command line without REDIS_URL) reaches
 * running replicas only when this runs out.
 */
export const KEY_CACHE_TTL_MS = 10_000;

/**
 * How long a replica remembers that a key is unknown: a flood of made-up keys costs one database read per key
 * per this time, not one per request (docs/api.md, Abuse limits).
 */
export const KEY_MISS_TTL_MS = 5_000;
