// The probe's one answer, for its Koa route and the node:http fast path (shared/http/keyed-fast-path.ts).
import type { AppUserService } from './service.js';
import type { StateView } from './store.js';
import type { Principal } from '../../shared/http/auth.js';
import { PRIVATE_NO_CACHE } from '../../shared/http/caching.js';
import { representation, strongEtag, type Representation } from '../../shared/http/conditional.js';
import { APP_USER_ID } from '../../shared/http/ids.js';

/**
 * The state's representation; undefined for a malformed appUserId (the Koa route answers 400). At once when the
 * state is cached, as a polled probe's mostly is; else once the store has answered.
 */
export function lifecycleAnswer(
  users: AppUserService,
  principal: Principal,
  appUserId: string,
  ifNoneMatch: string | undefined,
): Representation | undefined | Promise<Representation> {
  if (!APP_USER_ID.test(appUserId)) return undefined;
  const represent = ({ state }: StateView) =>
    representation(ifNoneMatch, strongEtag(state), () => ({ appUserId, state }), PRIVATE_NO_CACHE);
  const cached = users.cachedState(principal.accountId, appUserId);
  return cached ? represent(cached) : users.state(principal.accountId, appUserId).then(represent);
}
