// Reading one page of a health system's FHIR search for a sync (docs/connecting.md, "Sync"): with the connection's
// access token, a 15 s deadline, one refresh and retry on 401, and a 429 or 503's Retry-After honoured (at most
// 60 s, at most 3 times). Failures are SyncFailures whose `reason` is the word `connection.sync_failed` carries.
import { OutboundError, type PolicyFetch } from '../../../../core/src/net/policy-fetch.js';
import { ReauthorizationRequired, TokensUnreadable, type TokenVault } from '../token-vault/index.js';

export const PAGE_TIMEOUT_MS = 15_000;
export const MAX_RETRY_AFTER_MS = 60_000;
/** When a 429 or 503 names no wait. */
const DEFAULT_RETRY_AFTER_MS = 5_000;
const BUSY_RETRIES = 3;

export class SyncFailure extends Error {
  override name = 'SyncFailure';
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export interface PageReaderDeps {
  fetch: PolicyFetch;
  vault: Pick<TokenVault, 'accessToken'>;
  /** Waits out a Retry-After (injected: tests move time instead). */
  pause: (ms: number) => Promise<void>;
  /** Called before a wait, so the run's claim outlives it. */
  beforeWait?: () => Promise<void>;
  timeoutMs?: number;
}

/** The page at `url` as JSON (a Bundle is checked by the caller). */
export async function readPage(deps: PageReaderDeps, connectionId: string, url: string): Promise<unknown> {
  let refused: string | undefined;
  let busy = 0;
  for (;;) {
    let token: string;
    try {
      token = await deps.vault.accessToken(connectionId, refused);
    } catch (error) {
      if (error instanceof ReauthorizationRequired) throw new SyncFailure('reauthorization_required', error.message);
      if (error instanceof TokensUnreadable) throw new SyncFailure('token_unreadable', error.message);
      throw new SyncFailure('token_refresh_failed', (error as Error).message);
    }
    let response: Response;
    try {
      response = await deps.fetch(url, {
        headers: { authorization: `Bearer ${token}`, accept: 'application/fhir+json' },
        signal: AbortSignal.timeout(deps.timeoutMs ?? PAGE_TIMEOUT_MS),
      });
    } catch (error) {
      const reason = error instanceof OutboundError && error.reason === 'refused' ? 'refused_address' : 'unavailable';
      throw new SyncFailure(reason, (error as Error).message);
    }
    if (response.status === 401 && refused === undefined) {
      refused = token; // one refresh, then the same request again
      continue;
    }
    if ((response.status === 429 || response.status === 503) && busy < BUSY_RETRIES) {
      busy++;
      await deps.beforeWait?.();
      await deps.pause(retryAfterMs(response.headers.get('retry-after')));
      continue;
    }
    if (response.status === 401) throw new SyncFailure('unauthorized', 'the FHIR server refused a refreshed token');
    if (response.status === 429) throw new SyncFailure('rate_limited', 'the FHIR server kept answering 429');
    if (response.status >= 500) throw new SyncFailure('unavailable', `the FHIR server answered ${response.status}`);
    if (response.status !== 200)
      throw new SyncFailure(`http_${response.status}`, `the FHIR server answered ${response.status}`);
    try {
      return await response.json();
    } catch {
      throw new SyncFailure('invalid_response', 'the FHIR server answered something other than JSON');
    }
  }
}

/** Retry-After in seconds or as an HTTP date, capped at 60 s. */
export function retryAfterMs(value: string | null, now = Date.now()): number {
  if (value === null) return DEFAULT_RETRY_AFTER_MS;
  const ms = /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1000 : Date.parse(value) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS) : DEFAULT_RETRY_AFTER_MS;
}
