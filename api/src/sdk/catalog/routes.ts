import type { IncomingMessage } from 'node:http';
import type { Context, Middleware } from 'koa';
import { sendRepresentation, IF_NONE_MATCH } from '../../http/conditional.js';
import type { ApiRouter } from '../../http/openapi.js';
import { validate } from '../../http/validate.js';
import type { CatalogService } from './service.js';
import { lookupJson, searchJson } from './presenter.js';
import { AssetParams, BrandParams, LogoQuery, LookupResponse, SearchQuery, SearchResponse } from './schema.js';

const tags = ['Catalog'];
export const EDGE_CACHE = { 'Cache-Control': 'public, max-age=300, stale-while-revalidate=60' } as const;
export const LOGO_CACHE = 'public, max-age=86400';
const IMMUTABLE = 'public, max-age=31536000, immutable';
export const CATALOG_CORS = { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': 'ETag, X-Request-Id' } as const;

/** The absolute origin for logoUrl when PUBLIC_BASE_URL is unset: the request's scheme and host (Koa's rules, proxy trusted). */
export function originOf(req: IncomingMessage): string | undefined {
  const forwardedProto = req.headers['x-forwarded-proto'];
  const proto = (typeof forwardedProto === 'string' ? forwardedProto.split(',')[0]!.trim() : '') || ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http');
  const forwardedHost = req.headers['x-forwarded-host'];
  const host = (typeof forwardedHost === 'string' ? forwardedHost.split(',')[0]!.trim() : '') || req.headers.host;
  return host ? `${proto}://${host}` : undefined;
}

/** Every catalog response may be read by any web page: the catalog is public and holds no secrets. */
export function catalogCors(): Middleware {
  return async function catalogCorsMiddleware(ctx, next) {
    if (!ctx.path.startsWith('/api/sdk/v1/catalog/')) return next();
    ctx.set(CATALOG_CORS);
    if (ctx.method === 'OPTIONS') {
      ctx.set('Access-Control-Allow-Methods', 'GET, HEAD, OPTIONS');
      ctx.set('Access-Control-Allow-Headers', 'If-None-Match');
      ctx.set('Access-Control-Max-Age', '86400');
      ctx.status = 204;
      return;
    }
    await next();
  };
}

export function catalogRoutes(api: ApiRouter, catalog: CatalogService, publicBaseUrl: string | undefined): void {
  const origin = (ctx: Context) => publicBaseUrl ?? originOf(ctx.req) ?? `${ctx.protocol}://${ctx.host}`;
  const json = (text: string) => () => text;

  const search = validate({ query: SearchQuery });
  api.get(
    '/catalog/brands',
    {
      operationId: 'searchBrands',
      summary: 'Search health-system brands (public)',
      description:
        'Every query word must match the start of a word of the name, an alias, the city or the state (two-letter code or full name); case, diacritics and punctuation are ignored (apostrophes are dropped, other punctuation separates words); every word, not only the last, may be a prefix. Ranking: name starts with the query, then all words in the name, then matches needing an alias, then matches needing the location; ties by name, then id. Cached at the edge for 5 minutes; the ETag changes when a new snapshot is activated.',
      tags,
      requestHeaders: [IF_NONE_MATCH],
      responses: { 200: { description: 'Matching brands, best first.', schema: SearchResponse, headers: ['ETag', 'Cache-Control'] }, 304: { description: 'Not modified.' } },
    },
    search,
    async (ctx) => {
      const { value, etag } = catalog.search(search.get(ctx).query, origin(ctx));
      ctx.type = 'application/json';
      sendRepresentation(ctx, etag, json(searchJson(value, origin(ctx))), EDGE_CACHE);
    },
  );

  const byId = validate({ params: BrandParams });
  api.get(
    '/catalog/brands/:brandId',
    {
      operationId: 'getBrand',
      summary: 'Look up one brand (public)',
      description: 'An unknown or malformed id is 404.',
      tags,
      requestHeaders: [IF_NONE_MATCH],
      responses: { 200: { description: 'The brand.', schema: LookupResponse, headers: ['ETag', 'Cache-Control'] }, 304: { description: 'Not modified.' } },
    },
    byId,
    async (ctx) => {
      const { value, etag } = catalog.brand(byId.get(ctx).params.brandId, origin(ctx));
      ctx.type = 'application/json';
      sendRepresentation(ctx, etag, json(lookupJson(value, origin(ctx))), EDGE_CACHE);
    },
  );

  const logo = validate({ params: BrandParams, query: LogoQuery });
  api.get(
    '/catalog/brands/:brandId/logo',
    {
      operationId: 'getBrandLogo',
      summary: 'Redirect to the brand logo (public)',
      description:
        '307 to the pre-rendered artwork (or the rendered favicon fallback) of the requested size and format (PNG by default, or WebP). The URL of this operation is stable and usable as an image source. 404 when the brand has no artwork.',
      tags,
      responses: { 307: { description: 'Redirect to the asset.', headers: ['Location', 'Cache-Control'] } },
    },
    logo,
    async (ctx) => {
      const { params, query } = logo.get(ctx);
      ctx.status = 307;
      ctx.set('Location', catalog.logoLocation(params.brandId, query.size, query.format));
      ctx.set('Cache-Control', LOGO_CACHE);
    },
  );

  const asset = validate({ params: AssetParams });
  api.get(
    '/catalog/assets/:key',
    {
      operationId: 'getCatalogAsset',
      summary: 'A pre-rendered catalog asset (content-addressed, immutable)',
      tags,
      responses: { 200: { description: 'The image.', headers: ['ETag', 'Cache-Control'] }, 304: { description: 'Not modified.' } },
    },
    asset,
    async (ctx) => {
      const { key } = asset.get(ctx).params;
      const object = await catalog.asset(key);
      ctx.type = object.contentType;
      ctx.set('X-Content-Type-Options', 'nosniff');
      sendRepresentation(ctx, `"${key}"`, () => object.body, { 'Cache-Control': IMMUTABLE });
    },
  );
}
