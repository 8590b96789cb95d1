// One answer per public catalog read (search, lookup, logo redirect): the request in (raw query string, the
// brand id, headers), status, headers and body out. The Koa routes and the node:http fast path both call
// these, so they cannot drift; invalid input throws the AppError the Koa stack renders as problem details.
// Answers to valid requests are kept (answer-cache.ts) for the snapshot and health publication they were built
// from, and a request asked again is answered from there.
import { requestOrigin, type Origin } from '../../shared/http/origin.js';
import type { IncomingHttpHeaders } from 'node:http';
import { noneMatchHits } from '../../shared/http/conditional.js';
import type { FieldError } from '../../shared/http/errors.js';
import { queryReader, throwIfAny } from '../../shared/http/validate.js';
import { AnswerCache, MAX_BYTES, Sightings } from './answer-cache.js';
import { lookupJson, searchJson, type Body } from './presenter.js';
import { LogoQuery, SearchQuery } from './schema.js';
import type { CatalogService } from './service.js';

export const EDGE_CACHE = 'public, max-age=300, stale-while-revalidate=60';
export const LOGO_CACHE = 'public, max-age=86400';
export const CATALOG_CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': 'ETag, X-Request-Id',
} as const;
const JSON_TYPE = 'application/json; charset=utf-8';
/** What Koa sends with a bodiless redirect, so every path says the same. */
const REDIRECT_BODY = 'Temporary Redirect';

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
  /** The body's length in bytes, counted once for an answer that is kept and sent many times. */
  bytes?: number;
}

/** A 200 or 307 answer kept for its snapshot and health publication, and for a 200 the 304 that stands for it. */
interface Kept {
  full: CatalogAnswer;
  conditional?: { etag: string; notModified: CatalogAnswer };
}

export class CatalogAnswers {
  private readonly searchQuery = queryReader(SearchQuery);
  private readonly logoQuery = queryReader(LogoQuery);
  // Keyed by what each answer depends on besides the snapshot and health (the query string exactly as sent, so a
  // hit costs no parsing; the origin; the brand), each key starting with its operation's letter. Only answers
  // that validated are kept: any other request misses and is validated again.
  private readonly kept: AnswerCache<Kept>;
  /** Searches are kept from their second sighting (answer-cache.ts). */
  private readonly sightings = new Sightings();

  constructor(
    private readonly catalog: CatalogService,
    private readonly publicBaseUrl: string | undefined,
    private readonly trustProxy = false,
    /** The answer cache's bound (answer-cache.ts). */
    cacheBytes = MAX_BYTES,
  ) {
    this.kept = new AnswerCache<Kept>(
      (kept, key) => key.length + (kept.full.body?.length ?? 0) + (kept.conditional?.etag.length ?? 0),
      cacheBytes,
    );
  }

  search(request: CatalogRequest): CatalogAnswer {
    const answers = this.keptAnswers();
    // A request whose origin is invalid is never kept: it misses, and fails below after its query is validated.
    const known = this.validOrigin(request);
    const hit = known && answers.get(`s\n${known.origin}\n${request.query}`);
    if (hit) return conditional(hit, request);
    const errors: FieldError[] = [];
    const query = this.searchQuery(request.query, errors);
    throwIfAny(errors);
    const { origin, vary } = known ?? this.originOf(request);
    const { value, etag } = this.catalog.search(query, origin);
    const key = `s\n${origin}\n${request.query}`;
    // Every valid search is a sighting, revalidations (304) included: one asked again is kept, whatever it was answered.
    const keep = this.sightings.seenBefore(key) ? (kept: Kept) => answers.set(key, kept) : undefined;
    return representation(request, ROUTES.search, etag, () => searchJson(value, origin), vary, keep);
  }

  lookup(brandId: string, request: CatalogRequest): CatalogAnswer {
    const answers = this.keptAnswers();
    const { origin, vary } = this.originOf(request);
    const key = `b\n${origin}\n${brandId}`;
    const hit = answers.get(key);
    if (hit) return conditional(hit, request);
    const { value, etag } = this.catalog.brand(brandId, origin);
    return representation(
      request,
      ROUTES.lookup,
      etag,
      () => lookupJson(value, origin),
      vary,
      (kept) => answers.set(key, kept),
    );
  }

  logo(brandId: string, request: CatalogRequest): CatalogAnswer {
    const answers = this.keptAnswers();
    const key = `l\n${brandId}\n${request.query}`;
    const hit = answers.get(key);
    if (hit) return hit.full;
    const errors: FieldError[] = [];
    const { size, format } = this.logoQuery(request.query, errors);
    throwIfAny(errors);
    const location = this.catalog.logoLocation(brandId, size, format);
    const full = Object.freeze<CatalogAnswer>({
      status: 307,
      route: ROUTES.logo,
      headers: Object.freeze({
        ...CATALOG_CORS,
        Location: location,
        'Cache-Control': LOGO_CACHE,
        'Content-Type': 'text/plain; charset=utf-8',
      }),
      body: REDIRECT_BODY,
      bytes: REDIRECT_BODY.length,
    });
    answers.set(key, { full });
    return full;
  }

  /** The answers kept for the snapshot and health publication served now (read once per request). */
  private keptAnswers() {
    return this.kept.of(this.catalog.snapshotId, this.catalog.healthVersion);
  }

  /** What the answer cache holds now (entries, and bytes as it counts them). */
  get cacheUsage(): { entries: number; bytes: number } {
    return this.kept.usage;
  }

  /** Where `logoUrl`s point: PUBLIC_BASE_URL, else the scheme and host the request was sent to. */
  private originOf(request: CatalogRequest): Origin {
    return requestOrigin(this.publicBaseUrl, request.headers, request.encrypted, this.trustProxy);
  }

  private validOrigin(request: CatalogRequest): Origin | undefined {
    try {
      return this.originOf(request);
    } catch {
      return undefined;
    }
  }
}

/** A kept answer, or the 304 that stands for it when If-None-Match names its tag. */
function conditional({ full, conditional }: Kept, request: CatalogRequest): CatalogAnswer {
  return conditional && noneMatchHits(headerOf(request.headers, 'if-none-match'), conditional.etag)
    ? conditional.notModified
    : full;
}

/**
 * A 304 when If-None-Match names `etag`; else the 200. With `keep`, the 200 is built either way and handed to it
 * with its 304, so that an answer only ever revalidated is kept too.
 */
function representation(
  request: CatalogRequest,
  route: string,
  etag: string,
  body: () => Body,
  vary: string[],
  keep: ((kept: Kept) => void) | undefined,
): CatalogAnswer {
  const headers = {
    ...CATALOG_CORS,
    ETag: etag,
    'Cache-Control': EDGE_CACHE,
    ...(vary.length > 0 && { Vary: vary.join(', ') }),
  };
  const notModified = Object.freeze<CatalogAnswer>({ status: 304, route, headers: Object.freeze(headers) });
  const unchanged = noneMatchHits(headerOf(request.headers, 'if-none-match'), etag);
  if (unchanged && !keep) return notModified;
  const { text, bytes } = body();
  const full = Object.freeze<CatalogAnswer>({
    status: 200,
    route,
    headers: Object.freeze({ ...headers, 'Content-Type': JSON_TYPE }),
    body: text,
    bytes,
  });
  keep?.({ full, conditional: { etag, notModified } });
  return unchanged ? notModified : full;
}

function headerOf(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}
