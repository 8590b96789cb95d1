// Source documents over https, through the same SSRF-filtered fetcher as logos (private, loopback and
// link-local destinations refused, redirects re-checked, one deadline for the whole fetch) with limits
// sized for endpoint lists.
import { fetchHttps, type FetchLimits } from './logos/fetch.js';

export const SOURCE_FETCH_LIMITS: Readonly<FetchLimits> = { maxBytes: 64 * 1024 * 1024, timeoutMs: 180_000, maxRedirects: 5 };

export async function fetchSourceText(url: string): Promise<string> {
  if (!url.startsWith('https://')) throw new Error(`source URLs must use https (${url})`);
  const { bytes } = await fetchHttps(url, SOURCE_FETCH_LIMITS, { accept: 'application/json, application/fhir+json, text/csv, */*' });
  return bytes.toString('utf8');
}
