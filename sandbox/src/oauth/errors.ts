// OAuth errors as the token and revocation endpoints answer them (RFC 6749 §5.2): a JSON body, 400, or 401 for
// client authentication, never cached.
import type { Context } from 'koa';

export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status: 400 | 401 | 429 | 500 | 503 = 400,
  ) {
    super(`${error}: ${description}`);
  }
}

export function sendOAuthError(ctx: Context, error: OAuthError, retryAfterSeconds?: number): void {
  ctx.status = error.status;
  ctx.set('Cache-Control', 'no-store');
  if (error.status === 401 && /^basic /i.test(ctx.get('authorization')))
    ctx.set('WWW-Authenticate', 'Basic realm="sandbox"');
  if (retryAfterSeconds !== undefined) ctx.set('Retry-After', String(retryAfterSeconds));
  ctx.body = { error: error.error, error_description: error.description };
}
