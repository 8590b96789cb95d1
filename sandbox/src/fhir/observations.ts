// Observation search: the token's patient only, in (meta.lastUpdated, id) order, paged by an opaque cursor that
// names the last observation served, so any page costs the same and the server keeps nothing per search.
import type { Context } from 'koa';
import { BadRequest, queryParams } from '../http.js';
import { allows } from '../oauth/scopes.js';
import { fhirBase, type World } from '../world.js';
import { bearer } from './access.js';
import { sendOutcome } from './outcome.js';
import { encodeCursor, readObservationQuery, type ObservationQuery } from './search-params.js';
import { servedObservation } from './served-observation.js';

export function searchObservations(world: World, brandKey: string, ctx: Context): void {
  const token = bearer(world, brandKey, ctx);
  if (!token) return;
  if (!allows(token.family.scope, 'Observation', 's'))
    return sendOutcome(ctx, 403, 'the granted scope does not allow Observation search');
  let query: ObservationQuery;
  try {
    query = readObservationQuery(queryParams(ctx));
  } catch (error) {
    if (error instanceof BadRequest) return sendOutcome(ctx, 400, error.message);
    throw error;
  }
  const { patientId } = token.family;
  if (query.patient !== patientId) return sendOutcome(ctx, 403, 'this token is for another patient');

  const base = fhirBase(world, brandKey);
  const page = world.observations.page(brandKey, patientId, query.range, query.count, query.from);
  const link = (relation: string, cursor?: string, origin = world.origin) => {
    const params = new URLSearchParams({ patient: patientId, _count: String(query.count) });
    for (const given of query.lastUpdated) params.append('_lastUpdated', given);
    if (cursor) params.set('_cursor', cursor);
    return { relation, url: `${origin}/fhir/${brandKey}/Observation?${params.toString()}` };
  };
  const self = link('self', queryParams(ctx).get('_cursor') ?? undefined);
  const next = page.next && link('next', encodeCursor(page.next), world.switches.foreignNextOrigin ?? world.origin);
  ctx.type = 'application/fhir+json';
  ctx.body = {
    resourceType: 'Bundle',
    type: 'searchset',
    // The server's clock when it answered, which a client may take its next high-water mark from.
    ...(world.switches.bundleLastUpdated ? { meta: { lastUpdated: new Date(world.now()).toISOString() } } : {}),
    total: page.total,
    link: next ? [self, next] : [self],
    entry: page.entries.map((entry) => {
      const resource = servedObservation(world.switches, brandKey, patientId, entry);
      return { fullUrl: `${base}/Observation/${resource.id as string}`, resource, search: { mode: 'match' } };
    }),
  };
}
