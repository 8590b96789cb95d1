// Credentialed conditional GETs answered straight on node:http, ahead of Koa: the lifecycle probe (SDKs
// poll it every second) and the patient read. Each route's answer comes from the same function its Koa
// route calls (representation() over the same service call); the fast path only authenticates, routes and
// writes. Anything it does not answer with a 200 or 304 — no or a bad credential, a missing scope, invalid
// input, a denial, any error at all — falls through to Koa, which answers it again and owns every problem
// response, so both paths give the same answers.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hashKey, kindOf, type KeyKind } from '../credentials/keys.js';
import { principalFor, type KeyLookup, type Principal } from './auth.js';
import type { Representation } from './conditional.js';
import type { RequestObserver } from './observe.js';
import { requestIdFor } from './request-id.js';

export interface KeyedRoute {
  /** The Koa route template, for metrics and logs. */
  route: string;
  /** Matches the path (no query string); its groups are the route's parameters. */
  pattern: RegExp;
  kind: KeyKind;
  scope?: string;
  /** The answer, or undefined to let Koa answer (anything but a plain success). */
  answer(principal: Principal, params: string[], ifNoneMatch: string | undefined): Promise<Representation | undefined>;
}

const BEARER = /^Bearer +([\x21-\x7e]+) *$/i;

export function keyedFastPath(routes: KeyedRoute[], lookup: KeyLookup, observer: RequestObserver) {
  return function fastPath(req: IncomingMessage, res: ServerResponse, fallback: () => void): boolean {
    const url = req.url;
    if (req.method !== 'GET' || url === undefined) return false;
    const path = url.includes('?') ? url.slice(0, url.indexOf('?')) : url;
    for (const route of routes) {
      const match = route.pattern.exec(path);
      if (!match) continue;
      void serve(route, match.slice(1), req, res, lookup, observer).then(
        (served) => served || fallback(),
        () => (res.headersSent ? res.destroy() : fallback()),
      );
      return true;
    }
    return false;
  };
}

async function serve(route: KeyedRoute, params: string[], req: IncomingMessage, res: ServerResponse, lookup: KeyLookup, observer: RequestObserver): Promise<boolean> {
  const started = performance.now();
  const key = BEARER.exec(req.headers.authorization ?? '')?.[1];
  if (key === undefined || kindOf(key) !== route.kind) return false;
  const record = await lookup(hashKey(key));
  if (!record || record.revokedAt !== null || record.kind !== route.kind) return false;
  const principal = principalFor(record);
  if (route.scope !== undefined && !principal.scopes.has(route.scope)) return false;
  const decoded = params.map((p) => decodeURIComponent(p));
  const answer = await route.answer(principal, decoded, headerOf(req, 'if-none-match'));
  if (!answer) return false;
  const incomingId = headerOf(req, 'x-request-id');
  const requestId = requestIdFor(incomingId);
  const body = answer.status === 200 ? JSON.stringify(answer.body) : undefined;
  const headers: Record<string, string | number> = { 'X-Request-Id': requestId, ...answer.headers };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json; charset=utf-8';
    headers['Content-Length'] = Buffer.byteLength(body);
  }
  res.writeHead(answer.status, headers);
  res.end(body);
  observer.record({ method: 'GET', route: route.route, status: answer.status, seconds: (performance.now() - started) / 1000, requestId, credentialId: record.keyId });
  return true;
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}
