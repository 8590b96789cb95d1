// The public catalog's hottest reads — brand lookup, logo redirect and search — answered straight on
// node:http, ahead of the Koa stack: they are what every client app calls first and what a CDN revalidates,
// and Koa's per-request machinery costs more than the work itself. The fast path takes only requests it
// can answer completely: a GET with well-formed parameters whose outcome is a success (200, 304 or 307).
// Anything else — a bad parameter, an unknown brand, another method — falls through to the Koa routes,
// which own every error. Both produce the same status, headers and bytes (test/api/sdk/catalog-fast-path).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PLATFORM_TYPES } from '../../catalog/model.js';
import { noneMatchHits } from '../../http/conditional.js';
import type { RequestObserver } from '../../http/observe.js';
import { requestIdFor } from '../../http/request-id.js';
import { lookupJson, searchJson } from './presenter.js';
import { CATALOG_CORS, EDGE_CACHE, LOGO_CACHE, originOf } from './routes.js';
import { isLogoFormat, isLogoSize, type CatalogService } from './service.js';

const PREFIX = '/api/sdk/v1/catalog/brands';
const BRAND_ID = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_Q = 200;
const JSON_TYPE = 'application/json; charset=utf-8';

type Answer = { status: number; route: string; headers: Record<string, string>; body?: string };

export function catalogFastPath(catalog: CatalogService, observer: RequestObserver, publicBaseUrl: string | undefined) {
  return function fastPath(req: IncomingMessage, res: ServerResponse): boolean {
    const started = performance.now();
    const url = req.url;
    if (req.method !== 'GET' || url === undefined || !url.startsWith(PREFIX)) return false;
    const answer = answerFor(catalog, req, url, publicBaseUrl);
    if (!answer) return false;

    const requestId = requestIdFor(headerOf(req, 'x-request-id'));
    const headers: Record<string, string | number> = { 'X-Request-Id': requestId, ...CATALOG_CORS, ...answer.headers };
    if (answer.body !== undefined) headers['Content-Length'] = Buffer.byteLength(answer.body);
    res.writeHead(answer.status, headers);
    res.end(answer.body);
    observer.record({ method: 'GET', route: answer.route, status: answer.status, seconds: (performance.now() - started) / 1000, requestId });
    return true;
  };
}

function answerFor(catalog: CatalogService, req: IncomingMessage, url: string, publicBaseUrl: string | undefined): Answer | undefined {
  const queryAt = url.indexOf('?');
  const path = queryAt < 0 ? url : url.slice(0, queryAt);
  const query = queryAt < 0 ? undefined : new URLSearchParams(url.slice(queryAt + 1));
  const origin = publicBaseUrl ?? originOf(req);
  if (origin === undefined) return undefined;

  if (path === PREFIX) {
    const q = single(query, 'q');
    const platform = single(query, 'platform');
    const limit = single(query, 'limit');
    if (q === null || platform === null || limit === null) return undefined;
    if (q !== undefined && q.length > MAX_Q) return undefined;
    if (platform !== undefined && !(PLATFORM_TYPES as readonly string[]).includes(platform.toUpperCase())) return undefined;
    if (limit !== undefined && (!/^[0-9]{1,3}$/.test(limit) || Number(limit) < 1 || Number(limit) > 100)) return undefined;
    const { value, etag } = catalog.search({ limit: limit === undefined ? 25 : Number(limit), ...(q !== undefined && { q }), ...(platform !== undefined && { platform }) }, origin);
    return representation(req, '/api/sdk/v1/catalog/brands', etag, () => searchJson(value, origin));
  }

  const rest = path.slice(PREFIX.length + 1);
  if (path[PREFIX.length] !== '/') return undefined;
  const slash = rest.indexOf('/');
  const brandId = slash < 0 ? rest : rest.slice(0, slash);
  if (!BRAND_ID.test(brandId)) return undefined;

  if (slash < 0) {
    const found = catalog.findBrand(brandId, origin);
    return found && representation(req, '/api/sdk/v1/catalog/brands/:brandId', found.etag, () => lookupJson(found.value, origin));
  }
  if (rest.slice(slash) !== '/logo') return undefined;
  const size = single(query, 'size');
  if (size === null || (size !== undefined && !/^[0-9]{2,3}$/.test(size))) return undefined;
  const pixels = size === undefined ? 128 : Number(size);
  if (!isLogoSize(pixels)) return undefined;
  const format = single(query, 'format');
  if (format === null || (format !== undefined && !isLogoFormat(format))) return undefined;
  const location = catalog.findLogoLocation(brandId, pixels, format ?? 'png');
  if (location === undefined) return undefined;
  return {
    status: 307,
    route: '/api/sdk/v1/catalog/brands/:brandId/logo',
    headers: { Location: location, 'Cache-Control': LOGO_CACHE, 'Content-Type': 'text/plain; charset=utf-8' },
    body: 'Temporary Redirect', // what Koa sends with a bodiless redirect
  };
}

function representation(req: IncomingMessage, route: string, etag: string, body: () => string): Answer {
  const headers = { 'Content-Type': JSON_TYPE, ETag: etag, ...EDGE_CACHE };
  if (noneMatchHits(headerOf(req, 'if-none-match'), etag)) return { status: 304, route, headers: { ETag: etag, ...EDGE_CACHE } };
  return { status: 200, route, headers, body: body() };
}

/** The parameter's only value; undefined when absent, null when given twice (Koa's stack answers 400). */
function single(query: URLSearchParams | undefined, name: string): string | undefined | null {
  if (!query) return undefined;
  const values = query.getAll(name);
  return values.length === 0 ? undefined : values.length === 1 ? values[0]! : null;
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}
