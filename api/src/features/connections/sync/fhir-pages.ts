// Opening one page of a health system's FHIR search for a sync (docs/connecting.md, "Sync"): with the connection's
// access token, one refresh and retry on 401, and a 429 or 503's Retry-After honoured (at most 60 s, at most 3
// times). The page's body is handed on as a stream, read only as fast as the sync stores what it holds, so a page
// of many MiB is never in memory whole. Deadlines: 15 s for the answer to start and for each part of it to come,
// and 5 minutes of waiting for a whole page (the time the sync itself takes to store what it read does not count). Failures are SyncFailures whose
// `reason` is the word `connection.sync_failed` carries.
import { setTimeout as sleep } from 'node:timers/promises';
import { OutboundError, type PolicyFetch } from '#core/net/policy-fetch.js';
import { ReauthorizationRequired, TokensUnreadable, type TokenBinding, type TokenVault } from '../vault/index.js';

export const PAGE_TIMEOUT_MS = 15_000;
export const PAGE_TOTAL_MS = 5 * 60_000;
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
  /** A policy fetch in streaming mode. */
  fetch: PolicyFetch;
  vault: Pick<TokenVault, 'accessToken'>;
  /** Waits out a Retry-After; default: a timer (tests move time instead). */
  pause?: (ms: number) => Promise<void>;
  /** Called before a wait, so the run's claim outlives it. */
  beforeWait?: () => Promise<void>;
  timeoutMs?: number;
  totalMs?: number;
}

/** A page as it arrives: its body's chunks, and the server's clock (its `Date` header) when it sent it. */
export interface OpenPage {
  chunks: AsyncIterable<Uint8Array>;
  date: Date | null;
}

/** Opens the page at `url`: a 200 whose body is still to be read (a searchset is checked by the caller). */
export async function openPage(
  deps: PageReaderDeps,
  connectionId: string,
  binding: TokenBinding,
  url: string,
  /** What the request accepts (an attachment's content type); FHIR JSON by default. */
  accept = 'application/fhir+json',
): Promise<OpenPage> {
  let refused: string | undefined;
  let busy = 0;
  for (;;) {
    let token: string;
    try {
      token = await deps.vault.accessToken(connectionId, binding, refused);
    } catch (error) {
      if (error instanceof ReauthorizationRequired) throw new SyncFailure('reauthorization_required', error.message);
      if (error instanceof TokensUnreadable) throw new SyncFailure('token_key_missing', error.message);
      throw new SyncFailure('token_refresh_failed', (error as Error).message);
    }
    const abort = new AbortController();
    const timeoutMs = deps.timeoutMs ?? PAGE_TIMEOUT_MS;
    const headTimer = setTimeout(
      () => abort.abort(new OutboundError('timeout', 'no answer within its deadline')),
      timeoutMs,
    );
    let response: Response;
    try {
      response = await deps.fetch(url, {
        headers: { authorization: `Bearer ${token}`, accept },
        signal: abort.signal,
      });
    } catch (error) {
      const reason = error instanceof OutboundError && error.reason === 'refused' ? 'refused_address' : 'unavailable';
      throw new SyncFailure(reason, (error as Error).message);
    } finally {
      clearTimeout(headTimer);
    }
    if (response.status !== 200) await response.body?.cancel().catch(() => {});
    if (response.status === 401 && refused === undefined) {
      refused = token; // one refresh, then the same request again
      continue;
    }
    if ((response.status === 429 || response.status === 503) && busy < BUSY_RETRIES) {
      busy++;
      await deps.beforeWait?.();
      await (deps.pause ?? sleep)(retryAfterMs(response.headers.get('retry-after')));
      continue;
    }
    if (response.status === 401) throw new SyncFailure('unauthorized', 'the FHIR server refused a refreshed token');
    if (response.status === 429) throw new SyncFailure('rate_limited', 'the FHIR server kept answering 429');
    if (response.status >= 500) throw new SyncFailure('unavailable', `the FHIR server answered ${response.status}`);
    if (response.status !== 200)
      throw new SyncFailure(`http_${response.status}`, `the FHIR server answered ${response.status}`);
    if (!response.body) throw new SyncFailure('invalid_response', 'the FHIR server answered without a body');
    const date = Date.parse(response.headers.get('date') ?? '');
    return {
      chunks: withDeadlines(response.body, abort, timeoutMs, deps.totalMs ?? PAGE_TOTAL_MS),
      date: Number.isFinite(date) ? new Date(date) : null,
    };
  }
}

/**
 * The body's chunks, each of which must come within `idleMs` of being asked for, and all of them within `totalMs`
 * of waiting: the time between asks (the sync storing what it read) counts towards neither.
 */
async function* withDeadlines(
  body: ReadableStream<Uint8Array>,
  abort: AbortController,
  idleMs: number,
  totalMs: number,
): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  let waited = 0;
  try {
    for (;;) {
      const wait = Math.min(idleMs, totalMs - waited);
      const asked = Date.now();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new SyncFailure('unavailable', 'the FHIR server stopped sending the page')),
          Math.max(0, wait),
        );
      });
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await Promise.race([reader.read(), late]);
      } catch (error) {
        if (error instanceof SyncFailure) throw error;
        const reason =
          error instanceof OutboundError && error.reason === 'too-large' ? 'invalid_response' : 'unavailable';
        throw new SyncFailure(reason, (error as Error).message);
      } finally {
        clearTimeout(timer);
        waited += Date.now() - asked;
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // However the reading ended (done, failed, or the sync stopped pulling), the connection is let go.
    abort.abort();
    await reader.cancel().catch(() => {});
  }
}

/** Retry-After in seconds or as an HTTP date, capped at 60 s. */
export function retryAfterMs(value: string | null, now = Date.now()): number {
  if (value === null) return DEFAULT_RETRY_AFTER_MS;
  const ms = /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1000 : Date.parse(value) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS) : DEFAULT_RETRY_AFTER_MS;
}

/** A body read whole, up to `limit` bytes (null when longer: the rest is not read). */
export async function readWhole(chunks: AsyncIterable<Uint8Array>, limit: number): Promise<string | null> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    size += chunk.length;
    if (size > limit) return null;
    parts.push(Buffer.from(chunk));
  }
  return Buffer.concat(parts).toString('utf8');
}

/** JSON text parsed; a text that is not JSON is no resource (undefined: counted invalid). */
export function parsedJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
