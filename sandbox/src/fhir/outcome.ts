// FHIR errors: an OperationOutcome with the HTTP status, and the Bearer challenge on 401 (RFC 6750 §3).
import type { Context } from 'koa';

const ISSUE_CODES: Record<number, string> = {
  400: 'invalid',
  401: 'login',
  403: 'forbidden',
  404: 'not-found',
  429: 'throttled',
};

export function sendOutcome(ctx: Context, status: number, diagnostics: string, retryAfterSeconds?: number): void {
  ctx.status = status;
  ctx.type = 'application/fhir+json';
  if (status === 401) ctx.set('WWW-Authenticate', 'Bearer error="invalid_token"');
  if (retryAfterSeconds !== undefined) ctx.set('Retry-After', String(retryAfterSeconds));
  ctx.body = {
    resourceType: 'OperationOutcome',
    issue: [
      { severity: 'error', code: ISSUE_CODES[status] ?? (status >= 500 ? 'transient' : 'processing'), diagnostics },
    ],
  };
}
