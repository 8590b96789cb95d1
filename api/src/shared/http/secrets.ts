// Secrets handed to browsers (sign-in links, `state`, cookies): kept only as their digests, and checked against them in
// constant time, so that neither the database nor the time a comparison takes gives one away.
import { createHash, timingSafeEqual } from 'node:crypto';

/** SHA-256 of a secret, base64url: what is stored in its place. */
export const digest = (secret: string): string => createHash('sha256').update(secret).digest('base64url');

/** Whether `secret`'s digest is `expected`, compared in constant time; false when either is missing. */
export function matchesDigest(secret: string | undefined, expected: string | null | undefined): boolean {
  if (secret === undefined || !expected) return false;
  const given = Buffer.from(digest(secret));
  const wanted = Buffer.from(expected);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}
