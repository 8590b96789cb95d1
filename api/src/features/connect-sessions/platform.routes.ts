// Connect sessions on the platform surface (secret key): the link tokens an app's backend mints for the sessions its
// browser app initiates on the SDK surface (sdk.routes.ts), and the completion of sessions the backend connects.
import { principalOf, requireScope } from '../../shared/http/auth.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import { validate } from '../../shared/http/validate.js';
import type { LinkTokenService } from './link-tokens.js';
import { CompletedSession, LinkTokenCreated, MintLinkToken, SessionParams } from './schema.js';
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

export function linkTokenRoute(
  platform: ApiRouter,
  { linkTokens, idempotent }: { linkTokens: LinkTokenService } & Pick<RouteGuards, 'idempotent'>,
): void {
  const mint = validate({ body: MintLinkToken });
  platform.post(
    '/link-tokens',
    {
      operationId: 'createLinkToken',
      summary: 'Mint a link token: what lets your app start a patient sign-in for one of its users',
      description:
        "Call it from your backend when your signed-in user asks to connect, and hand `linkToken` to your app in the browser, which passes it to `POST /api/sdk/v1/connect-sessions` (or the SDK's `connect()`). A publishable key is public, so an initiate with `redirectUri` (a session that completes by itself when the patient signs in) needs a token your backend minted for that very app user: nobody else can start one for them. The token is opaque (`lt_` and 40 base62 characters), kept only as its SHA-256, single use, and expires after 30 minutes. It binds the account, `appId` (the app whose publishable key initiates), `appUserId`, `redirectUri` (one of the app's `redirectUris`, else 400) and, when given, `brandId` (a brand of the catalog, else 400) or `connectionId` (a live connection of this app user and brand in `REAUTHORIZATION_REQUIRED`, to reconnect: 400 when it is not this user's and brand's, 409 when it needs no reconnect). Without `brandId` the app, or the patient in Portico Connect, chooses the brand. Another account's app, like an unknown one, is 400; a suspended app is 409. A replay with the same `Idempotency-Key` returns the same token; a retry after a crash mints a new one (the lost one expires unused).",
      tags,
      responses: {
        201: { description: 'Minted.', schema: LinkTokenCreated, headers: ['Cache-Control'] },
      },
    },
    requireScope('app_user:write'),
    mint,
    idempotent(),
    async (ctx) => {
      const { linkToken, expiresAt } = await linkTokens.mint(principalOf(ctx), mint.get(ctx).body);
      ctx.status = 201;
      ctx.set(NO_STORE);
      ctx.body = { linkToken, expiresAt: expiresAt.toISOString() };
    },
  );
}
