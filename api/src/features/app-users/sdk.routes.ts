// The app-user lifecycle probe (docs/api.md, "Connecting a patient's health system"): built for SDKs polling every
// second. It reads the state through the per-replica cache every transition invalidates (one read by _id on a miss),
// and writes nothing, emits nothing and takes no token from the initiate bucket. The entity tag is the state itself,
// so a 304 means exactly "the state has not moved".
import { principalOf } from '../../shared/http/auth.js';
import { IF_NONE_MATCH } from '../../shared/http/conditional.js';
import { invalidField } from '../../shared/http/errors.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { validate } from '../../shared/http/validate.js';
import { AppUserId, AppUserParams, LifecycleState } from './schema.js';
import { lifecycleAnswer } from './lifecycle-answer.js';
import { APP_USER_ID_RULE } from '../../shared/http/ids.js';
import { Type } from '@sinclair/typebox';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import type { AppUserService } from './service.js';

export const Lifecycle = Type.Object(
  { appUserId: AppUserId, state: LifecycleState },
  { examples: [{ appUserId: 'user-8f3a2c', state: 'LIMITED' }] },
);

export function lifecycleRoutes(
  sdk: ApiRouter,
  { users, requireKey }: { users: AppUserService } & Pick<RouteGuards, 'requireKey'>,
): void {
  const probe = validate({ params: AppUserParams });
  sdk.get(
    '/app-users/:appUserId/lifecycle',
    {
      operationId: 'probeAppUserLifecycle',
      summary: "Poll an app user's lifecycle state",
      description:
        'Resolves (your customer account, appUserId) to UNLINKED, LIMITED, ACTIVE or TOMBSTONED. Read-only: no write, no event, no connect session, no provisioning, and no token from the initiate rate-limit bucket. Poll it with `If-None-Match`: the entity tag is the state, so 304 means the state has not moved.',
      tags: ['App users'],
      requestHeaders: [IF_NONE_MATCH],
      responses: {
        200: { description: 'The state.', schema: Lifecycle, headers: ['ETag', 'Cache-Control', 'Vary'] },
        304: { description: 'The state has not moved.' },
      },
    },
    requireKey('sdk-publishable'),
    probe,
    async (ctx) => {
      const appUserId = probe.get(ctx).params.appUserId;
      const answer = await lifecycleAnswer(users, principalOf(ctx), appUserId, ctx.get('If-None-Match') || undefined);
      if (!answer) throw invalidField('path', 'appUserId', APP_USER_ID_RULE);
      ctx.set(answer.headers);
      ctx.status = answer.status;
      ctx.body = answer.status === 304 ? null : answer.body;
    },
  );
}
