// The observation gateway's routes: POST /observations/_search with a body, and GET with the cursor of a
// `next` link (so standard FHIR clients can page). Both answer a FHIR searchset Bundle.
import type { IncomingMessage } from 'node:http';
import type { Context } from 'koa';
import { acceptAjv } from '#core/schema.js';
import { principalOf } from '../../shared/http/auth.js';
import type { KeyedRoute } from '../../shared/http/keyed-fast-path.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { nodeRequestOrigin, requestOrigin } from '../../shared/http/origin.js';
import { MAX_BODY_BYTES, queryReader, validate } from '../../shared/http/validate.js';
import type { FieldError } from '../../shared/http/errors.js';
import { SearchBody, SearchQuery, SearchSet } from './gateway/schema.js';
import type { GatewayService, SearchPage } from './gateway/service.js';
import type { ReadInteraction } from './gateway/read-log.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';

const tags = ['Observation gateway'];
const PATH = '/api/sdk/v1/observations/_search';
const MEDIA_TYPES = ['application/json', 'application/fhir+json'];
const DESCRIPTION =
  "Checks, in order, before any clinical data is read: the `ak_` key and its scope `observation:read` (403 `GATEWAY_ACCESS_DENIED`, `details.reason` INSUFFICIENT_SCOPE); app-tenant residency (an absent, revoked or another app's or account's connection is one identical 404); the install (the app is not suspended, else APP_NOT_INSTALLED; a suspended app's keys are refused before that with the same 401 as an unknown key, so this reason only shows a suspension made while the request was checked); the subject (the app user is ACTIVE, else SUBJECT_NOT_ACTIVE); the resource type (Observation granted, else RESOURCE_TYPE_NOT_GRANTED). Then the install's LOINC allow-list, confidentiality and sensitivity labels (a resource without labels counts as N with none) and look-back window (a resource counts when its effective range ends inside it; one without an effective date is then left out) filter together with `code`, `category` and `date` before anything is counted or paged (over a per-replica index of the connection that every ingest refreshes, or inside the database query for a connection too large to index), so `total` and paging count only what the caller may see. Every denial is logged with the request id, key id and reason. The `next` link's cursor is signed, carries every parameter and the point in time the search began (observations ingested later are not part of the walk, so a walk returns each visible observation once), and is bound to the key's app. An observation re-ingested during a walk with a different effective date moves in the sort order and may be returned twice or not at all. `fullUrl` is `<base>/api/sdk/v1/fhir/connections/{connectionId}/Observation/{id}`, which a `GET` with the same key reads (the connection's FHIR base: the same search there takes FHIR search parameters).";

/** What the gateway's routes are given. */
export type GatewayRouteDeps = { gateway: GatewayService } & Pick<
  RouteGuards,
  'requireKey' | 'publicBaseUrl' | 'trustProxy'
>;

export function gatewayRoutes(
  sdk: ApiRouter,
  { gateway, requireKey, publicBaseUrl, trustProxy }: GatewayRouteDeps,
): void {
  const respond = (ctx: Context, page: SearchPage) => {
    const answer = searchAnswer(page, ctx.req, publicBaseUrl, trustProxy);
    ctx.set(answer.headers);
    ctx.body = answer.body;
  };

  const scoped = gatewayScope(gateway);
  const post = validate({ body: SearchBody, bodyMediaTypes: MEDIA_TYPES.slice(1) });
  sdk.post(
    '/observations/_search',
    {
      operationId: 'searchObservations',
      summary: "Search a connection's observations (FHIR searchset)",
      description: DESCRIPTION,
      tags,
      responses: {
        200: {
          description: 'A FHIR Bundle, `application/fhir+json`.',
          schema: SearchSet,
          contentType: 'application/fhir+json',
        },
      },
    },
    requireKey('sdk-secret'),
    scoped,
    post,
    async (ctx) => {
      const { body } = post.get(ctx);
      respond(ctx, await gateway.search(principalOf(ctx), String(ctx.state.requestId), { body }));
    },
  );

  const get = validate({ query: SearchQuery });
  sdk.get(
    '/observations/_search',
    {
      operationId: 'continueObservationSearch',
      summary: 'The next page of a search (the `next` link)',
      description:
        'A `GET` of a `next` link with the same `ak_` key continues the search; the checks run again on every page.',
      tags,
      responses: {
        200: {
          description: 'A FHIR Bundle, `application/fhir+json`.',
          schema: SearchSet,
          contentType: 'application/fhir+json',
        },
      },
    },
    requireKey('sdk-secret'),
    scoped,
    get,
    async (ctx) => {
      respond(
        ctx,
        await gateway.search(principalOf(ctx), String(ctx.state.requestId), { cursor: get.get(ctx).query.cursor }),
      );
    },
  );
}

/**
 * The search on the node:http fast path (shared/http/keyed-fast-path.ts): a plain, valid POST body or a `next`
 * link's cursor; anything else, and every denial, is left to the Koa routes above (which log it).
 */
export function gatewayFastRoutes({
  gateway,
  publicBaseUrl,
  trustProxy,
}: Omit<GatewayRouteDeps, 'requireKey'>): KeyedRoute[] {
  const readQuery = queryReader(SearchQuery);
  const search = async (
    principal: Parameters<GatewayService['search']>[0],
    requestId: string,
    input: Parameters<GatewayService['search']>[2],
    req: IncomingMessage,
  ) => {
    nodeRequestOrigin(req, publicBaseUrl, trustProxy); // (a refused origin is a 400 before anything is read)
    return searchAnswer(
      await gateway.search(principal, requestId, input, { logDenials: false }),
      req,
      publicBaseUrl,
      trustProxy,
    );
  };
  return [
    {
      operationId: 'searchObservations',
      kind: 'ak',
      scope: 'observation:read',
      body: { check: acceptAjv.compile(SearchBody), mediaTypes: MEDIA_TYPES, maxBytes: MAX_BODY_BYTES },
      answer: ({ principal, requestId, body, req }) => search(principal, requestId, { body: body as SearchBody }, req),
    },
    {
      operationId: 'continueObservationSearch',
      kind: 'ak',
      scope: 'observation:read',
      answer: async ({ principal, requestId, query, req }) => {
        const errors: FieldError[] = [];
        const { cursor } = readQuery(query, errors);
        return errors.length > 0 ? undefined : search(principal, requestId, { cursor }, req);
      },
    },
  ];
}

/**
 * What a route reads, from its path's parameters, when its path names the connection (the FHIR face): its scope
 * refusal is then recorded in the access log like any other refusal. Undefined when nothing would be read.
 */
export type ScopedRead = (
  params: Record<string, string>,
) => { interaction: ReadInteraction; type: string | null } | undefined;

/**
 * The scope, the first check, made ahead of reading the request's input. Without `read` (the gateway's own search,
 * whose connection is in a body not read yet) the refusal cannot be attributed to a connection, so it is not recorded.
 */
export function gatewayScope(gateway: GatewayService, read?: ScopedRead) {
  return Object.assign(
    async function gatewayScope(ctx: Context, next: () => Promise<unknown>) {
      const params = (ctx.params as Record<string, string> | undefined) ?? {};
      const what = read?.(params);
      if (what)
        await gateway.requireScope(principalOf(ctx), String(ctx.state.requestId), params.connectionId, {
          ...what,
          log: true,
        });
      else gateway.checkScope(principalOf(ctx), String(ctx.state.requestId));
      await next();
    },
    { openapi: { scopes: ['observation:read'] } },
  );
}

/** A connection's FHIR base (fhir.routes.ts), after the origin. */
export const fhirBasePath = (connectionId: string) => `/api/sdk/v1/fhir/connections/${connectionId}`;

/**
 * The 200 of a search, for every path: the Bundle's bytes and its headers. Its links continue the search where it
 * was asked: the gateway's own route, or the connection's FHIR base (`face: 'fhir'`); entries' fullUrl is always the
 * readable URL on the FHIR base.
 */
export function searchAnswer(
  page: SearchPage,
  req: IncomingMessage,
  publicBaseUrl: string | undefined,
  trustProxy: boolean,
  face: 'gateway' | 'fhir' = 'gateway',
) {
  const { origin: base, vary } = requestOrigin(
    publicBaseUrl,
    req.headers,
    (req.socket as { encrypted?: boolean }).encrypted === true,
    trustProxy,
  );
  const fhir = `${base}${fhirBasePath(page.connectionId)}`;
  const link = (cursor: string) =>
    `${face === 'fhir' ? `${fhir}/Observation` : `${base}${PATH}`}?cursor=${encodeURIComponent(cursor)}`;
  const links = [
    { relation: 'self', url: link(page.self) },
    ...(page.next ? [{ relation: 'next', url: link(page.next) }] : []),
  ];
  const headers: Record<string, string> = {
    'Cache-Control': 'no-store',
    'Content-Type': 'application/fhir+json; charset=utf-8',
    ...(vary.length > 0 && { Vary: vary.join(', ') }),
  };
  return {
    status: 200 as const,
    headers,
    body: bundleBody(page, links, `${fhir}/Observation/`),
  };
}

/**
 * The searchset Bundle as bytes. Each entry after the base of its fullUrl is UTF-8 already (the index built
 * it once, entryTail()), so the Bundle is copied together in one buffer: no stringify, no re-encoding.
 */
function bundleBody(page: SearchPage, links: { relation: string; url: string }[], entryBase: string): Buffer {
  const head = Buffer.from(
    `{"resourceType":"Bundle","type":"searchset","total":${page.total},"link":${JSON.stringify(links)},"entry":[`,
  );
  const start = Buffer.from(`,{"fullUrl":${JSON.stringify(entryBase).slice(0, -1)}`);
  const body = Buffer.allocUnsafe(
    head.length +
      page.items.reduce((sum, item) => sum + start.length + item.tail.length, 0) -
      (page.items.length > 0 ? 1 : 0) +
      END.length,
  );
  body.set(head, 0);
  let offset = head.length;
  page.items.forEach((item, i) => {
    body.set(i === 0 ? start.subarray(1) : start, offset);
    offset += i === 0 ? start.length - 1 : start.length;
    body.set(item.tail, offset);
    offset += item.tail.length;
  });
  body.set(END, offset);
  return body;
}

const END = Buffer.from(']}');
