// The account's way to its patient's own page (docs/connecting.md, "The patient's page"): a single-use link the app
// opens for its signed-in user ("Manage sharing").
import { TLSSocket } from 'node:tls';
import { Type } from '@sinclair/typebox';
import { principalOf, requireScope } from '../../shared/http/auth.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { requestOrigin } from '../../shared/http/origin.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import { validate } from '../../shared/http/validate.js';
import { AppUserParams } from '../app-users/index.js';
import type { PortalService } from './service.js';

const NO_STORE = { 'Cache-Control': 'no-store' };

const PortalSessionCreated = Type.Object({
  url: Type.String({
    format: 'uri',
    description: "The patient's page: open it in the patient's browser. Single use, opaque.",
  }),
  expiresAt: Type.String({ format: 'date-time', description: 'The link opens the page until then (15 minutes).' }),
});

export function portalSessionRoute(
  platform: ApiRouter,
  {
    portal,
    idempotent,
    publicBaseUrl,
    trustProxy,
  }: { portal: PortalService } & Pick<RouteGuards, 'idempotent' | 'publicBaseUrl' | 'trustProxy'>,
): void {
  const input = validate({ params: AppUserParams });
  platform.post(
    '/app-users/:appUserId/portal-sessions',
    {
      operationId: 'createPortalSession',
      summary: "A link to the patient's own page, where they see and stop what they share",
      description:
        'Call it from your backend when your signed-in user chooses "Manage sharing", and open `url` in their browser. The page lists each health system the user connected (logo, name, when it last synced, what your app may read), who read their records (the access log in plain words, and as FHIR JSON to download), and a "Stop sharing" button per connection, which revokes it exactly as `DELETE /connections/{id}` does (its tokens revoked at the health system, `connection.revoked` with `by: "patient"`). The link is opaque, kept only as its SHA-256, opens the page once within 15 minutes, and the page then stays open for 15 minutes in that browser only (an HttpOnly cookie); a second visit, or a late one, shows a page saying so. A user this account never saw is 404.',
      tags: ['App users'],
      responses: {
        201: { description: 'Minted.', schema: PortalSessionCreated, headers: ['Cache-Control'] },
      },
    },
    requireScope('app_user:write'),
    input,
    idempotent(),
    async (ctx) => {
      const { origin } = requestOrigin(publicBaseUrl, ctx.headers, ctx.req.socket instanceof TLSSocket, trustProxy);
      const { url, expiresAt } = await portal.mint(principalOf(ctx).accountId, input.get(ctx).params.appUserId, origin);
      ctx.status = 201;
      ctx.set(NO_STORE);
      ctx.body = { url, expiresAt: expiresAt.toISOString() };
    },
  );
}
