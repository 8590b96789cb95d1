// The public catalog's hottest reads (brand lookup, logo redirect, search) answered straight on node:http,
// ahead of the Koa stack: they are what every client app calls first and what a CDN revalidates, and Koa's
// per-request machinery costs more than the work itself. The answer comes from the same CatalogAnswers the
// Koa routes use; the fast path only routes and writes. Anything it does not answer with success — another
// method or path, invalid input, an unknown brand, and any error at all — falls through to Koa, which
// answers it from the same function and owns every problem response (a throw here never escapes).
// Its paths are the routers' own: catalogFastPath() reads the three operations' templates from the routers' table
// and refuses to start when they are not the shapes it routes by (a search path, /{brandId} below it, /logo below
// that), so a route moved in sdk.routes.ts cannot leave the fast path answering the old one.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestObserver } from '../../shared/http/observe.js';
import { requestIdOf } from '../../shared/http/request-id.js';
import { ROUTES, type CatalogAnswer, type CatalogAnswers, type CatalogRequest } from './answers.js';

const PREFIX = ROUTES.search;

/** The operations the fast path answers, and the template each must have in the routers' table. */
const ANSWERED = { searchBrands: ROUTES.search, getBrand: ROUTES.lookup, getBrandLogo: ROUTES.logo } as const;

export function catalogFastPath(
  answers: CatalogAnswers,
  observer: RequestObserver,
  table: readonly { operationId: string; method: string; path: string }[],
) {
  for (const [operationId, template] of Object.entries(ANSWERED)) {
    const row = table.find((r) => r.operationId === operationId);
    if (row?.method !== 'get' || row.path !== template) {
      throw new Error(
        `the catalog fast path answers ${operationId} as GET ${template}; the routers serve ${JSON.stringify(row)}`,
      );
    }
  }
  return function fastPath(req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url;
    if (req.method !== 'GET' || url === undefined || !url.startsWith(PREFIX)) return false;
    const started = performance.now();
    let answer: CatalogAnswer | undefined;
    let requestId: string;
    try {
      answer = answerFor(answers, req, url);
      if (!answer) return false;
      requestId = requestIdOf(req);
      const headers: Record<string, string | number> = { 'X-Request-Id': requestId, ...answer.headers };
      if (answer.body !== undefined) headers['Content-Length'] = answer.bytes ?? Buffer.byteLength(answer.body);
      res.writeHead(answer.status, headers);
      res.end(answer.body);
    } catch {
      if (!res.headersSent) return false; // Koa answers it again and renders the problem (or a logged 500)
      res.destroy();
      return true;
    }
    observer.record({
      method: 'GET',
      route: answer.route,
      status: answer.status,
      seconds: (performance.now() - started) / 1000,
      requestId,
    });
    return true;
  };
}

/** Routes a catalog GET to its answer; undefined for a path the fast path does not serve. */
function answerFor(answers: CatalogAnswers, req: IncomingMessage, url: string): CatalogAnswer | undefined {
  const queryAt = url.indexOf('?');
  const path = queryAt < 0 ? url : url.slice(0, queryAt);
  const request: CatalogRequest = {
    query: queryAt < 0 ? '' : url.slice(queryAt + 1),
    headers: req.headers,
    encrypted: (req.socket as { encrypted?: boolean }).encrypted === true,
  };
  if (path === PREFIX) return answers.search(request);
  if (path[PREFIX.length] !== '/') return undefined;
  const rest = path.slice(PREFIX.length + 1);
  const slash = rest.indexOf('/');
  if (slash < 0) return rest === '' ? undefined : answers.lookup(rest, request);
  if (rest.slice(slash) !== '/logo' || slash === 0) return undefined;
  return answers.logo(rest.slice(0, slash), request);
}
