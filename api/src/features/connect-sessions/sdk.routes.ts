// Connect sessions, initiated on the SDK surface (publishable key); completed on the platform surface
// (platform.routes.ts). Both go through ConnectSessionService.
import { TLSSocket } from 'node:tls';
import { principalOf } from '../../shared/http/auth.js';
import { requestOrigin } from '../../shared/http/origin.js';
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
    publicBaseUrl,
    trustProxy,
  }: { sessions: ConnectSessionService } & Pick<
    RouteGuards,
    'requireKey' | 'idempotent' | 'publicBaseUrl' | 'trustProxy'
  >,
): void {
  const initiate = validate({ body: InitiateSession });
  sdk.post(
    '/connect-sessions',
    {
      operationId: 'initiateConnectSession',
      summary: 'Initiate a connect session for an app user and a brand',
      description:
        "A never-seen app user is provisioned `LIMITED` (emits `app_user.limited`). The session stays `PENDING` for 30 minutes. With `redirectUri` (one of the app's `redirectUris`) and a `linkToken` your backend minted for this app user (`POST /api/platform/v1/link-tokens`: a publishable key alone starts no sign-in; 400 `LINK_TOKEN_INVALID` or `LINK_TOKEN_MISMATCH` otherwise, taking no rate-limit token), and a brand Portico holds a client registration for, the answer carries `authorizeUrl`: open it in the patient's browser to sign in at the health system (SMART App Launch), after which the browser returns to `redirectUri` with `session`, `status` and `connectionId` or `error`, and Portico keeps the connection's records in sync (docs/connecting.md). A brand without a registration is then 409 `BRAND_NOT_CONNECTABLE`. With `redirectUri` and no `brandId`, `authorizeUrl` opens Portico Connect, the hosted page where the patient finds their health system (`brandId` is `null` until then); without either, 400. `connectionId` reconnects a connection in `REAUTHORIZATION_REQUIRED`. Without `redirectUri`, your backend completes the session with `POST /api/platform/v1/connect-sessions/{id}/complete`. An unknown brand is 400; a `TOMBSTONED` user is 409. Rate limited by two token buckets shared by every replica: one per (customer account, appUserId), the appUserId case-folded (`PORTICO_INITIATE_RATE_LIMIT`, default 10 per 60 s, policy `initiate`), and one per publishable key (`PORTICO_INITIATE_KEY_RATE_LIMIT`, default 60 per 60 s, policy `initiate-key`). An empty bucket is 429 `RATE_LIMITED` with `Retry-After` (the longer wait when both are empty); neither bucket pays for the other's refusal. The request is checked first and takes no token when refused for it (a body that fails validation, an unknown brand); a `TOMBSTONED` user's 409 has taken them. Every answer to a request with a valid publishable key, success or error, carries `RateLimit-Policy` and `RateLimit` (IETF draft) for both buckets, or for the key's alone when the body names no valid appUserId; a replayed answer shows them as they stand (a replay takes no token); a 401 has no bucket to show.",
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
      const { session, launchSecret, rateHeaders } = await sessions.initiate(principalOf(ctx), initiate.get(ctx).body);
      ctx.status = 201;
      ctx.set({ ...rateHeaders, ...NO_STORE });
      const origin = () => requestOrigin(publicBaseUrl, ctx.headers, ctx.req.socket instanceof TLSSocket, trustProxy);
      ctx.body = {
        id: session.id,
        appUserId: session.appUserId,
        brandId: session.brandId,
        status: session.status,
        expiresAt: session.expiresAt.toISOString(),
        ...(launchSecret !== null && { authorizeUrl: launchUrl(origin().origin, session.id, launchSecret) }),
      };
    },
  );
}

/** The authorizeUrl of a session: opaque to the app, single use (features/connections/launch/launch.service.ts). */
export const launchUrl = (origin: string, sessionId: string, secret: string): string =>
  `${origin}/api/sdk/v1/connect/launch/${sessionId}.${secret}`;
