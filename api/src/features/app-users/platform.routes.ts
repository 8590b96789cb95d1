// App users on the platform surface: read, tombstone. The lifecycle is AppUserService's; app users belong to the
// customer account. Revoking one connection is features/connections' (its platform.routes.ts).
import { principalOf, requireScope } from '../../shared/http/auth.js';
import {
  ifMatch,
  preconditionOf,
  sendRepresentation,
  strongEtag,
  IF_NONE_MATCH,
} from '../../shared/http/conditional.js';
import { PRIVATE_NO_CACHE } from '../../shared/http/caching.js';
import { invalidField } from '../../shared/http/errors.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { validate } from '../../shared/http/validate.js';
import { presentAppUser, type SyncView } from './presenter.js';
import { AppUserParams, AppUserView } from './schema.js';
import { APP_USER_ID, APP_USER_ID_RULE } from '../../shared/http/ids.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import type { AppUserService } from './service.js';

const tags = ['App users'];

/** 400 unless the path's appUserId has the documented syntax (docs/api.md, "Connecting a patient's health system"). */
function appUserIdOf(raw: string): string {
  if (!APP_USER_ID.test(raw)) throw invalidField('path', 'appUserId', APP_USER_ID_RULE);
  return raw;
}

export function appUserRoutes(
  api: ApiRouter,
  {
    users,
    idempotent,
    syncStates,
  }: {
    users: AppUserService;
    /** Where signed-in connections' syncs stand (features/connections). */
    syncStates: { state(connectionId: string): Promise<(SyncView & { version: number }) | null> };
  } & Pick<RouteGuards, 'idempotent'>,
): void {
  const byId = validate({ params: AppUserParams });
  api.get(
    '/app-users/:appUserId',
    {
      operationId: 'getAppUser',
      summary: 'Get an app user, its lifecycle state and live connections',
      description: 'A user never seen is 200 `UNLINKED` with no connections, null timestamps and `_version` "0".',
      tags,
      requestHeaders: [IF_NONE_MATCH],
      responses: {
        200: { description: 'The app user.', schema: AppUserView, headers: ['ETag', 'Cache-Control', 'Vary'] },
        304: { description: 'Not modified.' },
      },
    },
    requireScope('app_user:read'),
    byId,
    async (ctx) => {
      const appUserId = appUserIdOf(byId.get(ctx).params.appUserId);
      const user = await users.find(principalOf(ctx).accountId, appUserId);
      // The entity tag covers the user and the syncs of its signed-in connections, which change on their own.
      const syncs = new Map<string, SyncView & { version: number }>();
      for (const c of user?.connections ?? []) {
        const sync = c.health ? await syncStates.state(c.id) : null;
        if (sync) syncs.set(c.id, sync);
      }
      const tag = [user?.version ?? 0, ...[...syncs.values()].map((s) => s.version)].join('.');
      sendRepresentation(ctx, strongEtag(tag), () => presentAppUser(appUserId, user, syncs), PRIVATE_NO_CACHE);
    },
  );

  api.delete(
    '/app-users/:appUserId',
    {
      operationId: 'tombstoneAppUser',
      summary: 'Tombstone an app user (terminal), revoking every connection',
      description:
        'Emits `connection.revoked` for each live connection, then `app_user.tombstoned`. A user never seen is tombstoned too (it can never connect). Repeating it is 204 and emits nothing. `If-Match` is compared with the user\'s `_version` ("0" for a user never seen): 412 when it does not match.',
      tags,
      responses: { 204: { description: 'Tombstoned.' } },
    },
    requireScope('app_user:write'),
    byId,
    ifMatch(),
    idempotent(),
    async (ctx) => {
      await users.tombstone(
        principalOf(ctx).accountId,
        appUserIdOf(byId.get(ctx).params.appUserId),
        preconditionOf(ctx),
      );
      ctx.status = 204;
    },
  );
}
