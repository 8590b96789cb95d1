// PorticoError: every failed call, from the API's problem details (RFC 9457) or from the network.
import type { components } from './schema.js';

export type Problem = components['schemas']['Problem'];

/** A non-2xx answer (its problem details), a network failure (`status` 0) or a client-side refusal. */
export class PorticoError extends Error {
  override readonly name = 'PorticoError';
  /** The HTTP status; 0 when no answer arrived (network failure, aborted) or the SDK refused the call. */
  readonly status: number;
  /** The problem's `code` (`RATE_LIMITED`, `NOT_FOUND`…), or `NETWORK_ERROR`, `UNEXPECTED_RESPONSE`, … */
  readonly code: string;
  readonly detail: string;
  /** True when the same request may succeed later (429, 500, 503, a network failure). */
  readonly retryable: boolean;
  /** `details` of the problem (`{}` when it has none). */
  readonly details: Record<string, unknown>;
  /** Seconds from `Retry-After`, when the answer carried one. */
  readonly retryAfterSeconds: number | undefined;
  readonly requestId: string | undefined;

  constructor(init: {
    status: number;
    code: string;
    detail: string;
    retryable: boolean;
    details?: Record<string, unknown>;
    retryAfterSeconds?: number | undefined;
    requestId?: string | undefined;
    cause?: unknown;
  }) {
    super(`${init.code}: ${init.detail}`, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.detail = init.detail;
    this.retryable = init.retryable;
    this.details = init.details ?? {};
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.requestId = init.requestId;
  }
}

/** `Retry-After` in seconds (delta-seconds or an HTTP date), or undefined. */
export function retryAfterSeconds(headers: Headers, now = Date.now()): number | undefined {
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

function isProblem(body: unknown): body is Partial<Problem> & { code: string } {
  return typeof body === 'object' && body !== null && typeof (body as { code?: unknown }).code === 'string';
}

/** The PorticoError for a non-2xx `response` whose body (parsed when JSON) is `body`. */
export function errorFromResponse(response: Response, body: unknown): PorticoError {
  const common = {
    status: response.status,
    retryAfterSeconds: retryAfterSeconds(response.headers),
    requestId: response.headers.get('x-request-id') ?? undefined,
  };
  if (isProblem(body))
    return new PorticoError({
      ...common,
      code: body.code,
      detail: typeof body.detail === 'string' ? body.detail : (body.title ?? response.statusText),
      retryable: typeof body.retryable === 'boolean' ? body.retryable : isRetryableStatus(response.status),
      details: typeof body.details === 'object' && body.details !== null ? body.details : {},
    });
  return new PorticoError({
    ...common,
    code: 'UNEXPECTED_RESPONSE',
    detail: `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`,
    retryable: isRetryableStatus(response.status),
  });
}

export function networkError(cause: unknown): PorticoError {
  const aborted = cause instanceof Error && cause.name === 'AbortError';
  return new PorticoError({
    status: 0,
    code: aborted ? 'ABORTED' : 'NETWORK_ERROR',
    detail: cause instanceof Error ? cause.message : String(cause),
    retryable: !aborted,
    cause,
  });
}

const isRetryableStatus = (status: number): boolean => status === 429 || status === 500 || status === 503;
