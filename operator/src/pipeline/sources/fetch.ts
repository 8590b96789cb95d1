// Source lists (vendor endpoint bundles, Lantern lists, CSV) over https, through core's public-only fetcher,
// with limits sized for lists of tens of thousands of endpoints. Failures are core's FetchErrors, which
// loadSource names after the source.
import { fetchHttps, type FetchLimits } from '#core/net/fetch.js';

export const SOURCE_FETCH_LIMITS: Readonly<FetchLimits> = {
  maxBytes: 64 * 1024 * 1024,
  timeoutMs: 180_000,
  maxRedirects: 5,
};
const USER_AGENT = 'Portico-catalog-operator (source lists)';

export async function fetchSourceList(url: string): Promise<string> {
  if (!url.startsWith('https://')) throw new Error(`source URLs must use https (${url})`);
  const { bytes } = await fetchHttps(url, SOURCE_FETCH_LIMITS, {
    accept: 'application/json, application/fhir+json, text/csv, */*',
    userAgent: USER_AGENT,
  });
  return bytes.toString('utf8');
}
