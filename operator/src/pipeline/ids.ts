// Brand ids: derived from the FHIR system identity alone, so a brand keeps its id in every snapshot for as
// long as its FHIR base URL exists, whatever its name or source does.
import { createHash } from 'node:crypto';
import { normaliseFhirBaseUrl } from './normalise.js';

// RFC 4648 base32, lower case: URL-safe, and safe for case-insensitive stores and file systems too.
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
// 160 bits of SHA-256: collisions among even millions of FHIR systems are out of reach.
const DIGEST_BYTES = 20;

function base32(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

/**
 * `b` + 32 base32 characters (33 in all). The URL is normalised first, so spellings of the same FHIR system
 * (http vs https, host case, trailing slash, :443) cannot yield different ids. Throws on an unusable URL.
 */
export function brandIdFor(normalisedFhirBaseUrl: string): string {
  const identity = normaliseFhirBaseUrl(normalisedFhirBaseUrl);
  if (identity === null)
    throw new Error(
      `cannot derive a brand id from ${JSON.stringify(normalisedFhirBaseUrl)}: not a usable FHIR base URL`,
    );
  const digest = createHash('sha256').update(identity, 'utf8').digest();
  return `b${base32(digest.subarray(0, DIGEST_BYTES))}`;
}
