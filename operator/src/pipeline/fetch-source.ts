// Source documents over https: through an SSRF-filtering agent (private, loopback and link-local
// destinations refused at connect time, redirects included), with size and time limits.
import { get } from 'node:https';
import { RequestFilteringHttpsAgent } from 'request-filtering-agent';

export const MAX_SOURCE_BYTES = 64 * 1024 * 1024;
const TIMEOUT_MS = 60_000;
const MAX_REDIRECTS = 5;

const agent = new RequestFilteringHttpsAgent({ allowPrivateIPAddress: false, allowMetaIPAddress: false, keepAlive: true });

/** Idle timeout per response, and one deadline for the whole fetch (a trickling server cannot hold a worker). */
export function fetchSourceText(url: string, redirects = 0, deadline = Date.now() + 3 * TIMEOUT_MS): Promise<string> {
  return new Promise((resolve, reject) => {
    if (!url.startsWith('https://')) return reject(new Error(`source URLs must use https (${url})`));
    const request = get(url, { agent, timeout: TIMEOUT_MS, headers: { accept: 'application/json, application/fhir+json, text/csv, */*' } }, (response) => {
      const status = response.statusCode ?? 0;
      if (status >= 300 && status < 400 && response.headers.location) {
        response.resume();
        if (redirects >= MAX_REDIRECTS) return reject(new Error(`too many redirects from ${url}`));
        return resolve(fetchSourceText(new URL(response.headers.location, url).toString(), redirects + 1, deadline));
      }
      if (status !== 200) {
        response.resume();
        return reject(new Error(`GET ${url} answered ${status}`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_SOURCE_BYTES) request.destroy(new Error(`${url} is larger than ${MAX_SOURCE_BYTES} bytes`));
        else chunks.push(chunk);
      });
      response.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`GET ${url} timed out after ${TIMEOUT_MS / 1000} s`)));
    const overall = setTimeout(() => request.destroy(new Error(`GET ${url} did not finish within ${(3 * TIMEOUT_MS) / 1000} s`)), Math.max(0, deadline - Date.now()));
    request.on('close', () => clearTimeout(overall));
    request.on('error', reject);
  });
}
