// The observation gateway's searches as walks (docs/api.md, "Clinical records and the observation gateway"): what a
// request's parameters ask for, or what its cursor continues, signed and bound to the account and the app.
import type { Clock } from '#core/clock.js';
import type { Principal } from '../../../shared/http/auth.js';
import type { CursorCodec } from '../../../shared/http/cursor.js';
import { invalidField } from '../../../shared/http/errors.js';
import { parseDateParam, parseToken, type SearchParams } from './query.js';
import type { SearchBody } from './schema.js';

const CURSOR_ROUTE = 'observations/_search';
const CURSOR_MAX = 16384;

/** Everything a search needs to continue: the cursor carries it, signed and bound to account and app. */
export interface Walk {
  connectionId: string;
  appId: string;
  params: SearchParams;
  count: number;
  asOf: number;
  after?: { sortDate: number; id: string };
}

/** The search a request asks for: its parameters, or the walk its cursor continues. */
export function walkOf(
  { cursors, clock }: { cursors: CursorCodec; clock: Clock },
  principal: Principal,
  { body, cursor }: { body?: SearchBody; cursor?: string },
): Walk {
  const presented = cursor ?? body?.cursor;
  if (presented === undefined) {
    const b = body!;
    const params: SearchParams = {
      sort: b._sort ?? '-date',
      ...(b.code !== undefined && { code: b.code }),
      ...(b.category !== undefined && { category: b.category }),
      ...(b.date !== undefined && { date: b.date }),
    };
    // Malformed parameters are a 400 before any check reads anything.
    if (params.code !== undefined) parseToken(params.code, 'code');
    if (params.category !== undefined) parseToken(params.category, 'category');
    for (const value of params.date ?? []) parseDateParam(value);
    return {
      connectionId: b.connectionId,
      appId: principal.appId!,
      params,
      count: b._count ?? 50,
      asOf: clock.now().getTime(),
    };
  }
  const where = cursor !== undefined ? 'query' : 'body';
  if (body && Object.keys(body).some((k) => k !== 'connectionId' && k !== 'cursor'))
    throw invalidField('body', 'cursor', 'carries the search: send only connectionId beside it');
  const rejected = invalidField(where, 'cursor', 'is not a cursor issued to this app');
  let walk: Walk;
  try {
    walk = cursors.decodeData({ route: CURSOR_ROUTE, accountId: principal.accountId }, presented, CURSOR_MAX) as Walk;
  } catch {
    throw rejected;
  }
  if (walk.appId !== principal.appId || (body && body.connectionId !== walk.connectionId)) throw rejected;
  return walk;
}

export function encodeWalk(cursors: CursorCodec, principal: Principal, walk: Walk): string {
  return cursors.encodeData({ route: CURSOR_ROUTE, accountId: principal.accountId }, walk);
}
