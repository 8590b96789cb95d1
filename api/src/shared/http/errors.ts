// The one error hierarchy. Services throw AppError; the error middleware renders it as problem details
// (RFC 9457). Anything else becomes a logged 500 whose body says nothing about internals.
import { MAX_DESCRIBED_PROBLEMS } from '#core/schema.js';

export const ERROR_CODES = {
  BAD_REQUEST: { status: 400, title: 'Bad request' },
  /** docs/connecting.md, "Link tokens": unknown, used or expired. */
  LINK_TOKEN_INVALID: { status: 400, title: 'Link token invalid' },
  /** docs/connecting.md, "Link tokens": the initiate asks for what the token does not bind. */
  LINK_TOKEN_MISMATCH: { status: 400, title: 'Link token mismatch' },
  UNAUTHORIZED: { status: 401, title: 'Unauthorized' },
  PLATFORM_ACCESS_DENIED: { status: 403, title: 'Access denied' },
  GATEWAY_ACCESS_DENIED: { status: 403, title: 'Gateway access denied' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  IDEMPOTENCY_KEY_IN_USE: { status: 409, title: 'Idempotency key in use' },
  /** Added to the interface's codes (openapi-notes.ts): executed, response lost, never retryable. */
  IDEMPOTENCY_KEY_EXECUTED: { status: 409, title: 'Idempotency key executed' },
  CONFLICT: { status: 409, title: 'Conflict' },
  LIMIT_EXCEEDED: { status: 409, title: 'Limit exceeded' },
  /** docs/connecting.md: Portico holds no client registration for the brand's health system. */
  BRAND_NOT_CONNECTABLE: { status: 409, title: 'Brand not connectable' },
  PRECONDITION_FAILED: { status: 412, title: 'Precondition failed' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, title: 'Idempotency key reused' },
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  /** Answered by node:http's clientError hook (shared/http/server.ts): the request line and headers are too large. */
  REQUEST_HEADER_FIELDS_TOO_LARGE: { status: 431, title: 'Request header fields too large' },
  INTERNAL_ERROR: { status: 500, title: 'Internal error' },
  SERVICE_UNAVAILABLE: { status: 503, title: 'Service unavailable' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

const RETRYABLE: ReadonlySet<ErrorCode> = new Set([
  'IDEMPOTENCY_KEY_IN_USE',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
  'SERVICE_UNAVAILABLE',
]);

export interface FieldError {
  in: 'body' | 'query' | 'path' | 'header';
  name: string;
  detail: string;
}

export class AppError extends Error {
  readonly status: number;
  readonly title: string;
  readonly retryable: boolean;

  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly details: Record<string, unknown> = {},
    /** Response headers that belong to this error (Allow, Retry-After, WWW-Authenticate). */
    readonly headers: Record<string, string> = {},
    /** storable: false for outcomes a retry may not see again (lost races), so idempotency does not replay them. */
    readonly options: { storable?: boolean } = {},
  ) {
    super(detail);
    this.name = 'AppError';
    this.status = ERROR_CODES[code].status;
    this.title = ERROR_CODES[code].title;
    this.retryable = RETRYABLE.has(code);
  }
}

/**
 * How many field errors a 400 describes (as many as a schema check describes); the rest are counted in
 * `details.errorsOmitted`, so that a body with 90,000 unknown properties gets a short answer, not megabytes.
 */
export const MAX_LISTED_ERRORS = MAX_DESCRIBED_PROBLEMS;

/**
 * 400 with `details.errors`: the first `limit` of `errors`, and `details.errorsOmitted` (only when some were
 * left out) counting the others plus `omitted`, problems found but never described.
 */
export function badRequest(
  detail: string,
  errors?: FieldError[],
  { limit = MAX_LISTED_ERRORS, omitted = 0 }: { limit?: number; omitted?: number } = {},
): AppError {
  if (!errors) return new AppError('BAD_REQUEST', detail);
  const listed = errors.length > limit ? errors.slice(0, limit) : errors;
  const left = omitted + errors.length - listed.length;
  return new AppError('BAD_REQUEST', detail, left > 0 ? { errors: listed, errorsOmitted: left } : { errors: listed });
}

export const invalidField = (where: FieldError['in'], name: string, detail: string): AppError =>
  badRequest(`Invalid ${where === 'path' ? 'path parameter' : where} "${name}": ${detail}`, [
    { in: where, name, detail },
  ]);

export const notFound = (what = 'resource'): AppError => new AppError('NOT_FOUND', `The ${what} does not exist.`);

export const serviceUnavailable = (dependency: string): AppError =>
  new AppError(
    'SERVICE_UNAVAILABLE',
    `A dependency (${dependency}) is unreachable; try again shortly.`,
    {},
    { 'Retry-After': '5' },
  );

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: ErrorCode;
  details: Record<string, unknown>;
  retryable: boolean;
}

export function problemOf(error: AppError, instance: string): ProblemDocument {
  return {
    type: `https://portico.dev/problems/${error.code.toLowerCase().replaceAll('_', '-')}`,
    title: error.title,
    status: error.status,
    detail: error.detail,
    instance,
    code: error.code,
    details: error.details,
    retryable: error.retryable,
  };
}
