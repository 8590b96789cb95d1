// Token revocation (RFC 7009): the client authenticates as at the token endpoint; the answer is 200 whether or
// not the token was known, so that it tells nobody which tokens exist.
import type { Context } from 'koa';
import { BadRequest, readForm, single } from '../http.js';
import type { World } from '../world.js';
import { authenticateClient } from './client-auth.js';
import { OAuthError, sendOAuthError } from './errors.js';

export async function revokeEndpoint(world: World, brandKey: string, ctx: Context): Promise<void> {
  try {
    const form = await readForm(ctx);
    const client = await authenticateClient(world, brandKey, ctx, form);
    const token = single(form, 'token');
    if (!token) throw new OAuthError('invalid_request', 'token is required');
    world.grants.revoke(token, brandKey, client.clientId);
    world.stats.revocations += 1;
    ctx.status = 200;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = '';
  } catch (error) {
    if (error instanceof BadRequest) return sendOAuthError(ctx, new OAuthError('invalid_request', error.message));
    if (error instanceof OAuthError) return sendOAuthError(ctx, error);
    throw error;
  }
}
