// Connect sessions: initiate on the SDK surface (publishable key), complete on the platform surface
// (secret key), both through ConnectSessionService.
import { principalOf, requireScope } from '../../shared/http/auth.js';
import { AppError } from '../../shared/http/errors.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { validate } from '../../shared/http/validate.js';
import type { PlatformContext } from '../../surfaces/platform.js';
import type { SdkContext } from '../../surfaces/sdk.js';
import { CompletedSession, InitiateSession, Session, SessionParams } from './schema.js';

const tags = ['Connect sessions'];
const NO_STORE = { 'Cache-Control': 'no-store' };

export function connectSessionRoutes(sdk: ApiRouter, { sessions, requireKey, idempotent }: SdkContext): void {
  const initiate = validate({ body: InitiateSession });
  sdk.post(
    '/connect-sessions',
    {
      operationId: 'initiateConnectSession',
      summary: 'Initiate a connect session for an app user and a brand',
      description:
        'A never-seen app user is provisioned `LIMITED` (emits `app_user.limited`). The session stays `PENDING` for 30 minutes, until your backend completes it with `POST /api/platform/v1/connect-sessions/{id}/complete`. An unknown brand is 400; a `TOMBSTONED` user is 409. Rate limited by two token buckets shared by every replica: one per (customer account, appUserId), the appUserId case-folded (`PORTICO_INITIATE_RATE_LIMIT`, default 10 per 60 s, policy `initiate`), and one per publishable key (`PORTICO_INITIATE_KEY_RATE_LIMIT`, default 60 per 60 s, policy `initiate-key`). An empty bucket is 429 `RATE_LIMITED` with `Retry-After` (the longer wait when both are empty); neither bucket pays for the other\'s refusal. The request is checked first and takes no token when refused for it (a body that fails validation, an unknown brand); a `TOMBSTONED` user\'s 409 has taken them. Every answer to a request with a valid publishable key, success or error, carries `RateLimit-Policy` and `RateLimit` (IETF draft) for both buckets, or for the key\'s alone when the body names no valid appUserId; a replayed answer shows them as they stand (a replay takes no token); a 401 has no bucket to show.',
      tags,
      responses: { 201: { description: 'Initiated.', schema: Session, headers: ['RateLimit-Policy', 'RateLimit', 'Cache-Control'] } },
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
      ctx.body = { id: session.id, appUserId: session.appUserId, brandId: session.brandId, status: session.status, expiresAt: session.expiresAt.toISOString() };
    },
  );
}

export function completeSessionRoute(platform: ApiRouter, { connectSessions, idempotent }: PlatformContext): void {
  const complete = validate({ params: SessionParams });
  platform.post(
    '/connect-sessions/:id/complete',
    {
      operationId: 'completeConnectSession',
      summary: 'Complete a connect session: the patient authorised at the brand',
      description:
        'The session is claimed first (of two completes at once, one gets 409; one that died part-way is finished by the next complete after 30 s, with the same connection id). Creates the connection (emits `connection.created`) and makes the app user `ACTIVE` (emits `app_user.activated` on its first connection). Completing twice, an expired session, a session of a suspended app or a `TOMBSTONED` user is 409 `CONFLICT`; another account\'s or an unknown session is 404. An app user holds at most 100 live connections (409 `LIMIT_EXCEEDED`).',
      tags,
      responses: { 200: { description: 'The connection.', schema: CompletedSession } },
    },
    requireScope('app_user:write'),
    complete,
    idempotent(),
    async (ctx) => {
      const { connection, appUserId } = await connectSessions.complete(principalOf(ctx), complete.get(ctx).params.id);
      ctx.set(NO_STORE);
      ctx.body = { connection: { id: connection.id, appUserId, appId: connection.appId, brandId: connection.brandId, createdAt: connection.createdAt.toISOString() } };
    },
  );
}
