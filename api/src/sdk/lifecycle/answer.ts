// The probe's one answer, for its Koa route and the node:http fast path (http/keyed-fast-path.ts).
import type { AppUserService } from '../../app-users/service.js';
import type { Principal } from '../../http/auth.js';
import { PRIVATE_NO_CACHE } from '../../http/caching.js';
import { representation, strongEtag, type Representation } from '../../http/conditional.js';
import { APP_USER_ID } from '../../http/ids.js';

/** The state's representation; undefined for a malformed appUserId (the Koa route answers 400). */
export async function lifecycleAnswer(users: AppUserService, principal: Principal, appUserId: string, ifNoneMatch: string | undefined): Promise<Representation | undefined> {
  if (!APP_USER_ID.test(appUserId)) return undefined;
  const { state } = await users.state(principal.accountId, appUserId);
  return representation(ifNoneMatch, strongEtag(state), () => ({ appUserId, state }), PRIVATE_NO_CACHE);
}
