// Connect sessions, initiated on the SDK surface (publishable key); completed on the platform surface
// (platform.routes.ts). Both go through ConnectSessionService.
import { principalOf } from '../../shared/http/auth.js';
import { AppError } from '../../shared/http/errors.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { validate } from '../../shared/http/validate.js';
import { InitiateSession, Session } from './schema.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import type { ConnectSessionService } from './service.js';

const tags = ['Connect sessions'];
const NO_STORE = { 'Cache-Control': 'no-store' };

export function connectSessionRoutes(
  sdk: ApiRouter,
  {
    sessions,
    requireKey,
    idempotent,
  }: { sessions: ConnectSessionService } & Pick<RouteGuards, 'requireKey' | 'idempotent'>,
): void {
  const initiate = validate({ body: InitiateSession });
  sdk.post(
    '/connect-sessions',
    {
      operationId: 'initiateConnectSession',
      summary: 'Initiate a connect session for an app user and a brand',
      description:
        "A never-seen app user is provisioned `LIMITED` (emits `app_user.limited`). The session stays `PENDING` for 30 minutes, until your backend completes it with `POST /api/platform/v1/connect-sessions/{id}/complete`. An unknown brand is 400; a `TOMBSTONED` user is 409. Rate limited by two token buckets shared by every replica: one per (customer account, appUserId), the appUserId case-folded (`PORTICO_INITIATE_RATE_LIMIT`, default 10 per 60 s, policy `initiate`), and one per publishable key (`PORTICO_INITIATE_KEY_RATE_LIMIT`, default 60 per 60 s, policy `initiate-key`). An empty bucket is 429 `RATE_LIMITED` with `Retry-After` (the longer wait when both are empty); neither bucket pays for the other's refusal. The request is checked first and takes no token when refused for it (a body that fails validation, an unknown brand); a `TOMBSTONED` user's 409 has taken them. Every answer to a request with a valid publishable key, success or error, carries `RateLimit-Policy` and `RateLimit` (IETF draft) for both buckets, or for the key's alone when the body names no valid appUserId; a replayed answer shows them as they stand (a replay takes no token); a 401 has no bucket to show.",
      tags,
      responses: {
        201: {
          description: 'Initiated.',
          schema: Session,
          headers: ['RateLimit-Policy', 'RateLimit', 'Cache-Control'],
        },
      },
    },
    requireKey('sdk-publishable'),
    async (ctx, next) => {
      // Every answer to a valid key shows the buckets. One that took no token shows them as they stand: a
      // request refused before it took any (a body that fails validation, an Idempotency-Key conflict, a full
      // write queue) and a replayed answer (idempotency does not store these fields).
      const appUserId = () => (ctx.state.input as { body?: InitiateSession } | undefined)?.body?.appUserId;
      try {
        await next();
      } catch (error) {
        throw error instanceof AppError ? await sessions.withRateFields(error, principalOf(ctx), appUserId()) : error;
      }
      if (!ctx.response.get('RateLimit')) ctx.set(await sessions.rateFields(principalOf(ctx), appUserId()));
    },
    initiate,
    idempotent(),
    async (ctx) => {
      const { session, rateHeaders } = await sessions.initiate(principalOf(ctx), initiate.get(ctx).body);
      ctx.status = 201;
      ctx.set({ ...rateHeaders, ...NO_STORE });
      ctx.body = {
        id: session.id,
        appUserId: session.appUserId,
        brandId: session.brandId,
        status: session.status,
        expiresAt: session.expiresAt.toISOString(),
      };
    },
  );
}
