// The two public stops of a patient's sign-in on the SDK surface (docs/connecting.md): the app's authorizeUrl, and
// the callback the health system sends the browser back to. Both answer the browser, not an app: redirects, or a
// small page for what cannot go back to the app.
import { TLSSocket } from 'node:tls';
import { Type } from '@sinclair/typebox';
import type { Context } from 'koa';
import { notFound } from '../../shared/http/errors.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { requestOrigin } from '../../shared/http/origin.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import type { LaunchService } from './launch/launch.service.js';
import type { LaunchOutcome } from './launch/outcomes.js';
import { PAGE_CSP, renderPage } from './launch/page.js';
import { asset, connectCsp, renderConsent, renderEnd, renderPicker } from './launch/connect-pages.js';
import { bindingCookie, readBindings, withBinding } from './launch/browser-binding.js';
import { consentCookie, readConsent } from './launch/consent.js';
import type { Clock } from '#core/clock.js';

const tags = ['Connect sessions'];
const LaunchParams = Type.Object({
  token: Type.String({ maxLength: 200, description: 'Opaque; from `authorizeUrl`.' }),
});
const LaunchQuery = Type.Object({
  brand: Type.Optional(
    Type.String({
      maxLength: 64,
      description: "Portico Connect's choice, for a session without a brand; else ignored.",
    }),
  ),
  consent: Type.Optional(
    Type.String({
      maxLength: 64,
      description:
        "The consent page's answer: the value its links carry, which must equal the one its cookie gave this browser.",
    }),
  ),
  decline: Type.Optional(
    Type.String({ maxLength: 8, description: '`1`: the patient chose not to share (with a matching `consent`).' }),
  ),
});
const CallbackQuery = Type.Object({
  state: Type.Optional(Type.String({ maxLength: 200 })),
  code: Type.Optional(Type.String({ maxLength: 4096 })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 2048 })),
  iss: Type.Optional(Type.String({ maxLength: 2048, description: "The health system's issuer (RFC 9207)." })),
});

export function smartLaunchRoutes(
  sdk: ApiRouter,
  {
    launches,
    connectImageOrigins,
    publicBaseUrl,
    trustProxy,
    clock,
  }: {
    launches: LaunchService;
    clock: Clock;
    /** Where Portico Connect's logos may come from besides this origin (connect-pages.ts). */
    connectImageOrigins: readonly string[];
  } & Pick<RouteGuards, 'publicBaseUrl' | 'trustProxy'>,
): void {
  const csp = connectCsp(connectImageOrigins);
  const originOf = (ctx: Context) =>
    requestOrigin(publicBaseUrl, ctx.headers, ctx.req.socket instanceof TLSSocket, trustProxy).origin;
  // The browser binding's cookie: `__Host-` and Secure where the browser reaches Portico over https.
  const secure = (ctx: Context) => originOf(ctx).startsWith('https:');
  const answer = (ctx: Context, outcome: LaunchOutcome) => {
    const isSecure = secure(ctx);
    const held = () => readBindings(ctx.get('Cookie'), isSecure);
    if (
      (outcome.kind === 'redirect' || outcome.kind === 'end') &&
      outcome.unbind !== undefined &&
      held().has(outcome.unbind)
    )
      ctx.append('Set-Cookie', bindingCookie(withBinding(held(), outcome.unbind), isSecure, 30 * 60));
    // The consent page gives the browser its value; anything after it (the patient's answer used) takes it back.
    if (outcome.kind === 'consent') {
      const lifetime = (outcome.expiresAt.getTime() - clock.now().getTime()) / 1000;
      ctx.append('Set-Cookie', consentCookie(outcome.value, isSecure, lifetime));
    } else if (readConsent(ctx.get('Cookie'), isSecure) !== undefined)
      ctx.append('Set-Cookie', consentCookie(undefined, isSecure));
    if (outcome.kind === 'redirect' && outcome.bind) {
      const { sessionId, secret, expiresAt } = outcome.bind;
      const lifetime = (expiresAt.getTime() - clock.now().getTime()) / 1000;
      ctx.append('Set-Cookie', bindingCookie(withBinding(held(), sessionId, secret), isSecure, lifetime));
    }
    answerWith(ctx, outcome, csp);
  };
  sdk.get(
    '/connect/launch/:token',
    {
      operationId: 'launchConnectSession',
      summary: "A connect session's authorizeUrl (opened in the patient's browser)",
      description:
        "Not called by apps: it is the `authorizeUrl` an initiate with `redirectUri` returns. A session without a brand shows Portico Connect, the hosted picker (200 HTML, as often as it is visited; `brand=<id>` is its choice: a brand Portico cannot connect shows the picker again with a notice), and a sign-in begun there ends on Portico Connect's end page (200 HTML naming the outcome, with a link that returns to the app with the same parameters) instead of a 303 to the app. Once the brand is known, Portico Connect's consent page comes first (200 HTML, no request to the health system yet): the app's name, the record types its install may read in plain words, that sharing lasts until the patient stops it, a \"Continue to <brand>\" link and a \"Don't share\" link. The page sets a cookie holding a fresh random value, `__Host-portico-consent` (`Secure; HttpOnly; SameSite=Lax; Path=/`, living no longer than the session; over plain http `portico-consent` without `Secure`), and both links carry the same value as `consent` (with `decline=1` for \"Don't share\"); a visit whose `consent` is missing or is not the cookie's shows the page again, so adding parameters to the URL skips nothing. \"Don't share\" fails the session and returns the browser to the app with `status=failed&error=access_denied` without contacting the health system. Continue (the cookie is then deleted) reads the brand's `.well-known/smart-configuration` (10 s deadline, cached up to an hour; it must offer PKCE S256) and answers 302 to the health system's `authorization_endpoint` with `response_type=code`, `client_id`, `redirect_uri` (this API's `/api/sdk/v1/connect/callback`), `scope` (SMART v2 `launch/patient offline_access patient/Patient.rs patient/Observation.rs` when the server lists `permission-v2`, else the v1 `.read` forms, unless the client registration names its own), `state` (256 random bits, bound to the session, single use), `aud` (the brand's FHIR base URL) and a PKCE S256 `code_challenge`. The 302 also sets the cookie that binds the sign-in to this browser: `__Host-portico-connect` (`Secure; HttpOnly; SameSite=Lax; Path=/`, living no longer than the session; over plain http in development `portico-connect` without `Secure`), holding up to four sign-ins of this browser. A brand whose registration pins `endpointHosts` (or, for a confidential client matched by FHIR host or brand, its FHIR host) and whose discovered authorization, token or revocation endpoint is elsewhere is not led to. When discovery fails, or the endpoints are not where the registration pins them, the session becomes FAILED and the browser returns to the app with `status=failed&error=brand_unavailable`; a visit after the sign-in started returns `error=session_used`, one after the session expired `error=session_expired` (both 303). An unknown link is a 404 page.",
      tags,
      input: { params: LaunchParams, query: LaunchQuery },
      responses: {
        200: {
          description: 'Portico Connect: the picker, the consent page (with its cookie), or the end page (HTML).',
          contentType: 'text/html',
          headers: ['Set-Cookie'],
        },
        302: { description: "On to the health system's sign-in.", headers: ['Location', 'Set-Cookie'] },
        303: { description: 'Back to the app (failed, or the patient chose not to share).', headers: ['Location'] },
        404: { description: 'An unknown link (an HTML page).', contentType: 'text/html' },
      },
    },
    async (ctx) => {
      const { brand, consent, decline } = ctx.query;
      const text = (value: unknown) => (typeof value === 'string' && value.length <= 64 ? value : undefined);
      answer(
        ctx,
        await launches.launch(String((ctx.params as Record<string, string>)['token']), originOf(ctx), {
          brand: text(brand),
          consent: text(consent),
          held: readConsent(ctx.get('Cookie'), secure(ctx)),
          decline: decline === '1',
        }),
      );
    },
  );

  sdk.get(
    '/connect/assets/:file',
    {
      operationId: 'getConnectAsset',
      summary: "Portico Connect's script and stylesheet (public)",
      description:
        '`picker.js`, `end.js`, `connect.css` and `portal.css`, the only resources the hosted pages (Portico Connect and the patient’s page) load. Anything else is 404.',
      tags,
      input: { params: Type.Object({ file: Type.String({ maxLength: 64 }) }) },
      responses: {
        200: { description: 'The file.', headers: ['ETag', 'Cache-Control'] },
        304: { description: 'Not modified.' },
      },
    },
    async (ctx) => {
      const file = asset(String((ctx.params as Record<string, string>)['file']));
      if (!file) throw notFound('asset');
      ctx.set({ ETag: file.etag, 'Cache-Control': 'public, max-age=300', 'X-Content-Type-Options': 'nosniff' });
      if (ctx.get('If-None-Match') === file.etag) {
        ctx.status = 304;
        return;
      }
      ctx.type = file.type;
      ctx.body = file.body;
    },
  );

  sdk.get(
    '/connect/callback',
    {
      operationId: 'connectCallback',
      summary: "The health system's redirect back to Portico (the patient's browser)",
      description:
        "Register `PUBLIC_BASE_URL` + `/api/sdk/v1/connect/callback` as the redirect URI of Portico's client at each health system. An unknown, used or expired `state` is a 400 page and changes nothing. So is a `state` whose browser does not hold the binding cookie its launch set (another browser, e.g. someone else signing in with a copied authorization link): the session stays usable, until it expires, by the browser that started it. Then RFC 9207: when the health system's `smart-configuration` lists `authorization_response_iss_parameter_supported: true`, `iss` must equal its discovered `issuer`, and an `iss` that is present is checked in any case; otherwise the session fails with `error=issuer_mismatch` and the code is never sent anywhere. An `error` from the health system fails the session and returns the browser to the app with `status=failed&error=<that error>` when it matches `^[a-z0-9_]{1,64}$`, else `error=invalid_request`. Otherwise the code is exchanged at the token endpoint (10 s deadline) with the PKCE verifier and the registration's client authentication: a refusal returns `error=<the token endpoint's OAuth error>` (`invalid_grant`, `invalid_client`…), an unusable answer (no `access_token`, a type other than Bearer, no `patient`) `error=invalid_token_response`, an unreachable server `error=brand_unavailable`, a suspended app `error=app_suspended`, a user that may no longer connect (tombstoned, or at its connection limit) `error=connection_refused`, a reconnect that signed in as another patient or on another FHIR server `error=patient_mismatch`; whatever a failed callback obtained is deleted and revoked at the health system. Back at the app, the sign-in's entry leaves the cookie. On success the connection is made as `complete` makes one (same events and lifecycle moves), records the FHIR base URL, the health system's patient id and the granted scope, and its first sync starts; the browser returns with 303 to `redirectUri?session=<id>&status=connected&connectionId=<id>`. Every return keeps the redirect URI's own query parameters.",
      tags,
      input: { query: CallbackQuery },
      responses: {
        200: {
          description: "Portico Connect's end page, for a sign-in begun in its picker (HTML).",
          contentType: 'text/html',
        },
        303: { description: 'Back to the app.', headers: ['Location'] },
        400: {
          description:
            'An unknown, used or expired `state`, or another browser than the one that started (an HTML page).',
          contentType: 'text/html',
        },
      },
    },
    async (ctx) => {
      const { state, code, error, iss } = ctx.query;
      const text = (value: unknown) => (typeof value === 'string' && value.length <= 4096 ? value : undefined);
      // `iss` given twice (or too long) is no issuer's: present, so it fails the check (RFC 9207 fails closed).
      const issuer = iss === undefined ? undefined : (text(iss) ?? '');
      const bindings = readBindings(ctx.get('Cookie'), secure(ctx));
      answer(
        ctx,
        await launches.callback({ state: text(state), code: text(code), error: text(error), iss: issuer }, bindings),
      );
    },
  );
}

function answerWith(ctx: Context, outcome: LaunchOutcome, pagesCsp: string): void {
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  if (outcome.kind === 'redirect') {
    ctx.status = outcome.status;
    ctx.set('Location', outcome.location);
    ctx.body = `Redirecting to ${outcome.location}`;
    ctx.type = 'text/plain; charset=utf-8';
    return;
  }
  ctx.type = 'text/html; charset=utf-8';
  if (outcome.kind === 'page') {
    ctx.status = outcome.status;
    ctx.set('Content-Security-Policy', PAGE_CSP);
    ctx.body = renderPage(outcome.title, outcome.message);
    return;
  }
  ctx.status = 200;
  ctx.set('Content-Security-Policy', pagesCsp);
  ctx.body =
    outcome.kind === 'picker'
      ? renderPicker(outcome.appName, outcome.notice)
      : outcome.kind === 'consent'
        ? renderConsent(outcome)
        : renderEnd(outcome);
}
