// The bytes behind a logo reference: `data:` URLs decoded here, `https:` URLs fetched through core's
// public-only fetcher with the logo limits and the logo renderer's user agent.
import { fetchHttps, type Fetched, type FetchLimits } from '#core/net/fetch.js';
import { LogoError } from './sniff.js';

export type { FetchLimits };

export const LOGO_FETCH_LIMITS: Readonly<FetchLimits> = {
  maxBytes: 2 * 1024 * 1024,
  timeoutMs: 10_000,
  maxRedirects: 3,
};
const USER_AGENT = 'Portico-catalog-operator (logo renderer)';

/** A GET for artwork or a page that links it, as the logo renderer. */
export function fetchForLogos(
  url: string | URL,
  limits: FetchLimits,
  options: { accept: string; truncate?: boolean },
): Promise<Fetched> {
  return fetchHttps(url, limits, { ...options, userAgent: USER_AGENT });
}

/** Decodes a `data:` URL (base64 or percent-encoded); the declared media type is ignored (bytes are sniffed). */
export function decodeDataUrl(url: string, maxBytes = LOGO_FETCH_LIMITS.maxBytes): Buffer {
  const match = /^data:([^,]*?)(;base64)?,(.*)$/is.exec(url);
  if (!match) throw new LogoError('bad-data-url', 'malformed data: URL');
  // A base64 body decodes to 3/4 of its length: refuse what cannot fit before decoding it.
  if (match[3]!.length > (match[2] ? (maxBytes * 4) / 3 + 4 : maxBytes * 3))
    throw new LogoError('too-large', `logo larger than ${maxBytes} bytes`);
  let body: Buffer;
  try {
    body = match[2] ? Buffer.from(match[3]!, 'base64') : Buffer.from(decodeURIComponent(match[3]!), 'utf8');
  } catch {
    throw new LogoError('bad-data-url', 'malformed percent-encoding in data: URL');
  }
  if (body.length > maxBytes) throw new LogoError('too-large', `logo larger than ${maxBytes} bytes`);
  return body;
}

/** The bytes behind a logo reference: `data:` decoded, `https:` fetched; anything else refused. */
export async function loadArtwork(reference: string, limits: FetchLimits = LOGO_FETCH_LIMITS): Promise<Buffer> {
  if (/^data:/i.test(reference)) return decodeDataUrl(reference, limits.maxBytes);
  let url: URL;
  try {
    url = new URL(reference);
  } catch {
    throw new LogoError('not-https', 'the logo reference is not a URL');
  }
  return (await fetchForLogos(url, limits, { accept: 'image/*' })).bytes;
}
