// The public catalog's Koa routes. Search, lookup and logo answer through CatalogAnswers, the same functions
// the fast path calls (api/src/features/catalog/fast-path.ts); errors reach the problem middleware.
import type { Context, Middleware } from 'koa';
import { sendRepresentation, IF_NONE_MATCH } from '../../shared/http/conditional.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { validate } from '../../shared/http/validate.js';
import { CATALOG_CORS, type CatalogAnswer, type CatalogAnswers, type CatalogRequest } from './answers.js';
import type { CatalogService } from './service.js';
import { AssetParams, BrandParams, LogoQuery, LookupResponse, SearchQuery, SearchResponse } from './schema.js';

const tags = ['Catalog'];
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** Every catalog response may be read by any web page: the catalog is public and holds no secrets. */
export function catalogCors(): Middleware {
  return async function catalogCorsMiddleware(ctx, next) {
    if (!ctx.path.startsWith('/api/sdk/v1/catalog/')) {
      await next();
      return;
    }
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

const brandIdOf = (ctx: Context): string => String((ctx.params as Record<string, string | undefined>).brandId);

const requestOf = (ctx: Context): CatalogRequest => ({
  query: ctx.querystring,
  headers: ctx.req.headers,
  encrypted: (ctx.req.socket as { encrypted?: boolean }).encrypted === true,
});

function respond(ctx: Context, answer: CatalogAnswer): void {
  ctx.status = answer.status;
  ctx.set(answer.headers);
  ctx.body = answer.body ?? null;
}

export function catalogRoutes(
  api: ApiRouter,
  {
    catalogAnswers: answers,
    catalogService: catalog,
  }: { catalogAnswers: CatalogAnswers; catalogService: CatalogService },
): void {
  api.get(
    '/catalog/brands',
    {
      operationId: 'searchBrands',
      summary: 'Search health-system brands (public)',
      description:
        'Every query word must match the start of a word of the name, an alias, the city or the state (two-letter code or full name); case, diacritics and punctuation are ignored (apostrophes are dropped, other punctuation separates words); every word, not only the last, may be a prefix. Ranking: name starts with the query, then all words in the name, then matches needing an alias, then matches needing the location; ties by name, then id.\n\n' +
        'Before those: a `q` that is a URL or host name lists the brands whose normalised FHIR base URL equals it, then those on its host, then those whose portal is on it, then those on its subdomains; a 10-digit `q` that is a valid NPI (Luhn over the 80840 prefix) lists the brands whose source rows carried it.\n\n' +
        'After them, when fewer than `limit` brands matched: the typo-tolerant fallback. Each word of 4-7 letters may be 1 edit away from a word of the brand, each of 8 or more 2 (insertion, deletion, substitution, or a swap of adjacent letters; a typo in the first letter counts as two), shorter words must still match as prefixes; at least one word needs an edit. These brands carry `fuzzy: true` and are ranked by total edits, then as above; exact results never change.\n\n' +
        'With `near`, each of these groups is ordered by distance instead (ties as above). Every brand shows its `endpoint` health, which the operator updates without a new snapshot; brands sharing a name in one response carry a `disambiguation`. Cached at the edge for 5 minutes; the ETag changes when a new snapshot is activated or any endpoint outcome changes.',
      tags,
      input: { query: SearchQuery },
      requestHeaders: [IF_NONE_MATCH],
      responses: {
        200: {
          description: 'Matching brands, best first.',
          schema: SearchResponse,
          headers: ['ETag', 'Cache-Control'],
        },
        304: { description: 'Not modified.' },
      },
    },
    async (ctx) => respond(ctx, answers.search(requestOf(ctx))),
  );

  api.get(
    '/catalog/brands/:brandId',
    {
      operationId: 'getBrand',
      summary: 'Look up one brand (public)',
      description: 'An unknown or malformed id is 404. The brand carries its `endpoint` health (see searchBrands).',
      tags,
      input: { params: BrandParams },
      requestHeaders: [IF_NONE_MATCH],
      responses: {
        200: { description: 'The brand.', schema: LookupResponse, headers: ['ETag', 'Cache-Control'] },
        304: { description: 'Not modified.' },
      },
    },
    async (ctx) => respond(ctx, answers.lookup(brandIdOf(ctx), requestOf(ctx))),
  );

  api.get(
    '/catalog/brands/:brandId/logo',
    {
      operationId: 'getBrandLogo',
      summary: 'Redirect to the brand logo (public)',
      description:
        '307 to the pre-rendered artwork (or the rendered favicon fallback) of the requested size and format (PNG by default, or WebP). The URL of this operation is stable and usable as an image source. 404 when the brand has no artwork.',
      tags,
      input: { params: BrandParams, query: LogoQuery },
      responses: { 307: { description: 'Redirect to the asset.', headers: ['Location', 'Cache-Control'] } },
    },
    async (ctx) => respond(ctx, answers.logo(brandIdOf(ctx), requestOf(ctx))),
  );

  const asset = validate({ params: AssetParams });
  api.get(
    '/catalog/assets/:key',
    {
      operationId: 'getCatalogAsset',
      summary: 'A pre-rendered catalog asset (content-addressed, immutable)',
      description: 'A key that was never stored is 404; object storage that cannot answer is 503.',
      tags,
      responses: {
        200: { description: 'The image.', headers: ['ETag', 'Cache-Control'] },
        304: { description: 'Not modified.' },
      },
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
