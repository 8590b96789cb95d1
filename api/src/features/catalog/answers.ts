// One answer per public catalog read (search, lookup, logo redirect): the request in (raw query string, the
// brand id, headers), status, headers and body out. The Koa routes and the node:http fast path both call
// these, so they cannot drift; invalid input throws the AppError the Koa stack renders as problem details.
import { requestOrigin, type Origin } from '../../shared/http/origin.js';
import type { IncomingHttpHeaders } from 'node:http';
import { noneMatchHits } from '../../shared/http/conditional.js';
import type { FieldError } from '../../shared/http/errors.js';
import { queryReader, throwIfAny } from '../../shared/http/validate.js';
import { lookupJson, searchJson } from './presenter.js';
import { LogoQuery, SearchQuery } from './schema.js';
import type { CatalogService } from './service.js';

export const EDGE_CACHE = 'public, max-age=300, stale-while-revalidate=60';
export const LOGO_CACHE = 'public, max-age=86400';
export const CATALOG_CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': 'ETag, X-Request-Id',
} as const;
const JSON_TYPE = 'application/json; charset=utf-8';

export const ROUTES = {
  search: '/api/sdk/v1/catalog/brands',
  lookup: '/api/sdk/v1/catalog/brands/:brandId',
  logo: '/api/sdk/v1/catalog/brands/:brandId/logo',
} as const;

export interface CatalogRequest {
  /** The query string as sent, without `?`. */
  query: string;
  headers: IncomingHttpHeaders;
  /** The request arrived over TLS (the scheme of its origin when no proxy says otherwise). */
  encrypted: boolean;
}

export interface CatalogAnswer {
  status: 200 | 304 | 307;
  /** The route template, for metrics and logs. */
  route: string;
  headers: Record<string, string>;
  body?: string;
}

export class CatalogAnswers {
  private readonly searchQuery = queryReader(SearchQuery);
  private readonly logoQuery = queryReader(LogoQuery);

  constructor(
    private readonly catalog: CatalogService,
    private readonly publicBaseUrl: string | undefined,
    private readonly trustProxy = false,
  ) {}

  search(request: CatalogRequest): CatalogAnswer {
    const errors: FieldError[] = [];
    const query = this.searchQuery(request.query, errors);
    throwIfAny(errors);
    const { origin, vary } = this.originOf(request);
    const { value, etag } = this.catalog.search(query, origin);
    return representation(request, ROUTES.search, etag, () => searchJson(value, origin), vary);
  }

  lookup(brandId: string, request: CatalogRequest): CatalogAnswer {
    const { origin, vary } = this.originOf(request);
    const { value, etag } = this.catalog.brand(brandId, origin);
    return representation(request, ROUTES.lookup, etag, () => lookupJson(value, origin), vary);
  }

  logo(brandId: string, request: CatalogRequest): CatalogAnswer {
    const errors: FieldError[] = [];
    const { size, format } = this.logoQuery(request.query, errors);
    throwIfAny(errors);
    const location = this.catalog.logoLocation(brandId, size, format);
    return {
      status: 307,
      route: ROUTES.logo,
      headers: {
        ...CATALOG_CORS,
        Location: location,
        'Cache-Control': LOGO_CACHE,
        'Content-Type': 'text/plain; charset=utf-8',
      },
      body: 'Temporary Redirect', // what Koa sends with a bodiless redirect, so every path says the same
    };
  }

  /** Where `logoUrl`s point: PUBLIC_BASE_URL, else the scheme and host the request was sent to. */
  private originOf(request: CatalogRequest): Origin {
    return requestOrigin(this.publicBaseUrl, request.headers, request.encrypted, this.trustProxy);
  }
}

function representation(
  request: CatalogRequest,
  route: string,
  etag: string,
  body: () => string,
  vary: string[],
): CatalogAnswer {
  const headers = {
    ...CATALOG_CORS,
    ETag: etag,
    'Cache-Control': EDGE_CACHE,
    ...(vary.length > 0 && { Vary: vary.join(', ') }),
  };
  if (noneMatchHits(headerOf(request.headers, 'if-none-match'), etag)) return { status: 304, route, headers };
  return { status: 200, route, headers: { ...headers, 'Content-Type': JSON_TYPE }, body: body() };
}

function headerOf(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}
