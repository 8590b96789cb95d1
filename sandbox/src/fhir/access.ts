// Who is asking: a Bearer access token issued by this brand, unexpired and unrevoked; anything else is a 401
// with the invalid_token challenge, which is what tells a client to refresh.
import type { Context } from 'koa';
import type { AccessToken } from '../oauth/grants.js';
import type { World } from '../world.js';
import { sendOutcome } from './outcome.js';

export function bearer(world: World, brandKey: string, ctx: Context): AccessToken | undefined {
  const match = /^bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
  const token = match ? world.grants.accessToken(match[1]!) : undefined;
  if (!token || token.family.brandKey !== brandKey) {
    sendOutcome(ctx, 401, 'a valid access token of this server is required');
    return undefined;
  }
  return token;
}
