// The patient's own page on the SDK surface (docs/connecting.md, "The patient's page"): public routes for the
// patient's browser, not for apps. The link opens the page once and leaves a cookie; the page, its "Stop sharing"
// forms and the log's download answer that cookie only. `__Host-portico-portal` (Secure, HttpOnly, SameSite=Lax,
// path /); over plain http in development `portico-portal` without Secure. Lax, not Strict: the link is opened from
// the app's site, and a browser sends no Strict cookie along a redirect chain that began on another site, so the page
// would never open. Lax still keeps it off any other site's POST: a form elsewhere cannot stop a patient's sharing,
// and the page's own forms carry a token derived from the cookie besides.
import { TLSSocket } from 'node:tls';
import { Type } from '@sinclair/typebox';
import type { Context } from 'koa';
import { cookieLine, readCookie } from '../../shared/http/cookies.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { requestOrigin } from '../../shared/http/origin.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import { connectCsp } from '../connections/index.js';
import { presentAuditEvent } from '../access-log/index.js';
import { renderPortal, renderRefusal } from './pages.js';
import { PORTAL_PATH, type PortalService, type Refusal } from './service.js';
import type { PortalSession } from './store.js';
import type { Clock } from '#core/clock.js';

const tags = ['Connect sessions'];
const STOPPED = 'Sharing stopped. The app can no longer read your records from that health system.';
const NOT_STOPPED = 'Nothing was changed: that sharing had already stopped, or this page is out of date.';

export function portalRoutes(
  sdk: ApiRouter,
  {
    portal,
    connectImageOrigins,
    publicBaseUrl,
    trustProxy,
    clock,
  }: {
    portal: PortalService;
    clock: Clock;
    connectImageOrigins: readonly string[];
  } & Pick<RouteGuards, 'publicBaseUrl' | 'trustProxy'>,
): void {
  const csp = connectCsp(connectImageOrigins);
  const secure = (ctx: Context) =>
    requestOrigin(publicBaseUrl, ctx.headers, ctx.req.socket instanceof TLSSocket, trustProxy).origin.startsWith(
      'https:',
    );
  const name = (ctx: Context) => (secure(ctx) ? '__Host-portico-portal' : 'portico-portal');
  const cookieOf = (ctx: Context) => readCookie(ctx.get('Cookie'), name(ctx));
  const html = (ctx: Context, status: number, body: string) => {
    ctx.set({ 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer', 'Content-Security-Policy': csp });
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = body;
  };
  const refused = (ctx: Context, refusal: Refusal) =>
    html(ctx, refusal === 'link_invalid' ? 404 : 410, renderRefusal(refusal));
  /** The page's session, or the page saying it expired (answered here). */
  const pageSession = async (ctx: Context): Promise<{ session: PortalSession; cookie: string } | undefined> => {
    const cookie = cookieOf(ctx);
    const session = await portal.session(cookie);
    if (typeof session === 'string' || cookie === undefined) {
      refused(ctx, 'page_expired');
      return undefined;
    }
    return { session, cookie };
  };

  sdk.get(
    '/portal/open/:token',
    {
      operationId: 'openPortal',
      summary: "The patient's page link (opened in the patient's browser)",
      description:
        "Not called by apps: it is the `url` of `POST /api/platform/v1/app-users/{appUserId}/portal-sessions`. The first visit within 15 minutes sets the page's cookie (`__Host-portico-portal`, Secure, HttpOnly, SameSite=Lax, path /, 15 minutes; `portico-portal` without Secure over plain http in development) and answers 303 to the page. A second visit is 410 (a page saying the link was used), a late one 410 (expired), an unknown one 404.",
      tags,
      input: { params: Type.Object({ token: Type.String({ maxLength: 200 }) }) },
      responses: {
        303: { description: 'On to the page.', headers: ['Location', 'Set-Cookie'] },
        404: { description: 'An unknown link (an HTML page).', contentType: 'text/html' },
        410: { description: 'A used or expired link (an HTML page).', contentType: 'text/html' },
      },
    },
    async (ctx) => {
      const opened = await portal.open(String((ctx.params as Record<string, string>)['token']));
      if (typeof opened === 'string') return refused(ctx, opened);
      const maxAge = Math.max(0, Math.floor((opened.expiresAt.getTime() - clock.now().getTime()) / 1000));
      ctx.set({ 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' });
      ctx.append(
        'Set-Cookie',
        cookieLine(name(ctx), opened.cookie, { secure: secure(ctx), maxAgeSeconds: maxAge, sameSite: 'Lax' }),
      );
      ctx.status = 303;
      ctx.set('Location', PORTAL_PATH);
      ctx.type = 'text/plain; charset=utf-8';
      ctx.body = 'On to your page.';
    },
  );

  sdk.get(
    '/portal',
    {
      operationId: 'getPortal',
      summary: "The patient's page (HTML)",
      description:
        'What the patient\'s link opened, while its cookie lives: each connected health system (logo, name, last sync, what the app may read), who read their records (newest 50, in plain words), a download of the whole log, and "Stop sharing" per connection. Without a live cookie: 410, a page saying it expired. `stopped` (set by the page itself) shows whether the last "Stop sharing" took effect.',
      tags,
      input: { query: Type.Object({ stopped: Type.Optional(Type.String({ maxLength: 8 })) }) },
      responses: {
        200: { description: 'The page.', contentType: 'text/html' },
        410: { description: 'The page expired (an HTML page).', contentType: 'text/html' },
      },
    },
    async (ctx) => {
      const open = await pageSession(ctx);
      if (!open) return;
      const { stopped } = ctx.query;
      const notice = stopped === 'yes' ? STOPPED : stopped === 'no' ? NOT_STOPPED : undefined;
      html(ctx, 200, renderPortal(await portal.view(open.session, open.cookie), notice));
    },
  );

  sdk.post(
    '/portal/connections/:connectionId/stop',
    {
      operationId: 'stopSharing',
      summary: '"Stop sharing" on the patient\'s page (a form, not for apps)',
      description:
        'Revokes the connection exactly as `DELETE /api/platform/v1/connections/{id}` does (tokens revoked at the health system, `connection.revoked` with `by: "patient"`), when the page\'s cookie lives, `token` is the one the page put in its form, and the connection is this patient\'s and live; then 303 back to the page, which says whether it took effect.',
      tags,
      input: {
        params: Type.Object({ connectionId: Type.String({ maxLength: 64 }) }),
        query: Type.Object({ token: Type.Optional(Type.String({ maxLength: 128 })) }),
      },
      responses: {
        303: { description: 'Back to the page.', headers: ['Location'] },
        410: { description: 'The page expired (an HTML page).', contentType: 'text/html' },
      },
    },
    async (ctx) => {
      const open = await pageSession(ctx);
      if (!open) return;
      const { token } = ctx.query;
      const connectionId = String((ctx.params as Record<string, string>)['connectionId']);
      const done =
        typeof token === 'string' && (await portal.stopSharing(open.session, open.cookie, connectionId, token));
      ctx.set({ 'Cache-Control': 'no-store' });
      ctx.status = 303;
      ctx.set('Location', `${PORTAL_PATH}?stopped=${done ? 'yes' : 'no'}`);
      ctx.type = 'text/plain; charset=utf-8';
      ctx.body = 'Back to your page.';
    },
  );

  sdk.get(
    '/portal/access-log.json',
    {
      operationId: 'exportAccessLog',
      summary: "The patient's access log as FHIR JSON (a download from their page)",
      description:
        "A FHIR R4 Bundle (`collection`) of AuditEvents, newest first, up to 10,000: the same entries `GET /api/platform/v1/app-users/{appUserId}/access-log` lists. Only with the page's live cookie; else 410.",
      tags,
      responses: {
        200: { description: 'The log.', contentType: 'application/fhir+json', headers: ['Content-Disposition'] },
        410: { description: 'The page expired (an HTML page).', contentType: 'text/html' },
      },
    },
    async (ctx) => {
      const open = await pageSession(ctx);
      if (!open) return;
      const { entries, names } = await portal.exportable(open.session);
      ctx.set({
        'Cache-Control': 'no-store',
        'Content-Disposition': 'attachment; filename="access-log.json"',
        'X-Content-Type-Options': 'nosniff',
      });
      ctx.type = 'application/fhir+json; charset=utf-8';
      ctx.body = {
        resourceType: 'Bundle',
        type: 'collection',
        timestamp: clock.now().toISOString(),
        entry: entries.map((entry) => ({
          fullUrl: `urn:uuid:${entry.id}`,
          resource: presentAuditEvent(entry, names(entry)),
        })),
      };
    },
  );
}
