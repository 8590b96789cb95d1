// Connect sessions, completed on the platform surface (secret key); initiated on the SDK surface (sdk.routes.ts).
import { principalOf, requireScope } from '../../shared/http/auth.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import { validate } from '../../shared/http/validate.js';
import { CompletedSession, SessionParams } from './schema.js';
import type { ConnectSessionService } from './service.js';

const tags = ['Connect sessions'];
const NO_STORE = { 'Cache-Control': 'no-store' };

export function completeSessionRoute(
  platform: ApiRouter,
  { connectSessions, idempotent }: { connectSessions: ConnectSessionService } & Pick<RouteGuards, 'idempotent'>,
): void {
  const complete = validate({ params: SessionParams });
  platform.post(
    '/connect-sessions/:id/complete',
    {
      operationId: 'completeConnectSession',
      summary: 'Complete a connect session: the patient authorised at the brand',
      description:
        "The session is claimed first (of two completes at once, one gets 409; one that died part-way is finished by the next complete after 30 s, with the same connection id). Creates the connection (emits `connection.created`) and makes the app user `ACTIVE` (emits `app_user.activated` on its first connection). Completing twice, an expired session, a session of a suspended app or a `TOMBSTONED` user is 409 `CONFLICT`; another account's or an unknown session is 404. An app user holds at most 100 live connections (409 `LIMIT_EXCEEDED`).",
      tags,
      responses: { 200: { description: 'The connection.', schema: CompletedSession } },
    },
    requireScope('app_user:write'),
    complete,
    idempotent(),
    async (ctx) => {
      const { connection, appUserId } = await connectSessions.complete(principalOf(ctx), complete.get(ctx).params.id);
      ctx.set(NO_STORE);
      ctx.body = {
        connection: {
          id: connection.id,
          appUserId,
          appId: connection.appId,
          brandId: connection.brandId,
          createdAt: connection.createdAt.toISOString(),
        },
      };
    },
  );
}
