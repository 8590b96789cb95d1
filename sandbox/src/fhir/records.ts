// Whole records on the FHIR server (fhir/record-store.ts): a search of any type by patient (`patient`, `_count`,
// `_lastUpdated=ge…`, `category`, paged by an offset cursor), a read of any resource, and Binary. The token's
// patient only; the switches make one type refused, a category required, attachments relative, a resource invalid.
import type { Context } from 'koa';
import { queryParams } from '../http.js';
import { allows } from '../oauth/scopes.js';
import { fhirBase, type World } from '../world.js';
import { bearer } from './access.js';
import { sendOutcome } from './outcome.js';
import type { Resource } from './record-store.js';

const MAX_COUNT = 100;
const DEFAULT_COUNT = 50;
const KNOWN = new Set(['patient', '_count', '_lastUpdated', '_cursor', 'category']);

export function searchRecords(world: World, brandKey: string, ctx: Context, type: string): void {
  const token = bearer(world, brandKey, ctx);
  if (!token) return;
  if (!allows(token.family.scope, type, 's'))
    return sendOutcome(ctx, 403, `the granted scope does not allow ${type} search`);
  const refused = world.switches.refuseTypes[type];
  if (refused !== undefined) return sendOutcome(ctx, refused, `${type} search is not available here (sandbox switch)`);
  const params = queryParams(ctx);
  for (const name of params.keys())
    if (!KNOWN.has(name)) return sendOutcome(ctx, 400, `unknown search parameter ${name}`);
  const { patientId } = token.family;
  if (params.get('patient') !== patientId) return sendOutcome(ctx, 403, 'this token is for another patient');
  const category = params.get('category');
  if (world.switches.categoryRequired.includes(type) && category === null)
    return sendOutcome(ctx, 400, `a ${type} search needs a category (sandbox switch)`);
  const count = Math.min(Number(params.get('_count') ?? DEFAULT_COUNT) || DEFAULT_COUNT, MAX_COUNT);
  const since = params.getAll('_lastUpdated').map((v) => (v.startsWith('ge') ? Date.parse(v.slice(2)) : NaN));
  if (since.some(Number.isNaN)) return sendOutcome(ctx, 400, '_lastUpdated takes ge<instant> only');
  let matches = world.records.search(brandKey, patientId, type, since.length > 0 ? Math.max(...since) : null);
  if (category !== null) matches = matches.filter((r) => hasCategory(r, category.split(',')));
  const offset = Number(params.get('_cursor') ?? 0) || 0;
  const page = matches.slice(offset, offset + count);
  const base = fhirBase(world, brandKey);
  const link = (relation: string, at: number, origin = world.origin) => {
    const next = new URLSearchParams(params);
    next.set('_cursor', String(at));
    return { relation, url: `${origin}/fhir/${brandKey}/${type}?${next.toString()}` };
  };
  const more = offset + count < matches.length;
  ctx.type = 'application/fhir+json';
  ctx.body = {
    resourceType: 'Bundle',
    type: 'searchset',
    ...(world.switches.bundleLastUpdated ? { meta: { lastUpdated: new Date(world.now()).toISOString() } } : {}),
    total: matches.length,
    link: [
      link('self', offset),
      ...(more ? [link('next', offset + count, world.switches.foreignNextOrigin ?? world.origin)] : []),
    ],
    entry: page.map((resource) => ({
      fullUrl: `${base}/${type}/${resource.id}`,
      resource: served(world, brandKey, resource),
      search: { mode: 'match' },
    })),
  };
}

/** A read of any resource the brand holds (the token's patient's, or one its records point at). */
export function readRecord(world: World, brandKey: string, ctx: Context, type: string, id: string): void {
  const token = bearer(world, brandKey, ctx);
  if (!token) return;
  if (!allows(token.family.scope, type, 'r'))
    return sendOutcome(ctx, 403, `the granted scope does not allow ${type} read`);
  const resource = world.records.read(brandKey, type, id);
  // Another patient's record is not there for this token (as a server enforcing the patient compartment answers).
  if (!resource || !world.records.readableBy(brandKey, `${type}/${id}`, token.family.patientId))
    return sendOutcome(ctx, 404, `no ${type}/${id}`);
  ctx.type = 'application/fhir+json';
  ctx.body = served(world, brandKey, resource);
}

/** An attachment's bytes with their content type, or the Binary resource when FHIR JSON is asked for. */
export function readBinary(world: World, brandKey: string, ctx: Context, id: string): void {
  const token = bearer(world, brandKey, ctx);
  if (!token) return;
  const binary = world.records.binary(brandKey, id);
  if (!binary || !world.records.readableBy(brandKey, `Binary/${id}`, token.family.patientId))
    return sendOutcome(ctx, 404, `no Binary/${id}`);
  world.stats.binaryReads += 1;
  if (/application\/(fhir\+)?json/.test(ctx.get('accept'))) {
    ctx.type = 'application/fhir+json';
    ctx.body = { resourceType: 'Binary', id, contentType: binary.contentType, data: binary.data.toString('base64') };
    return;
  }
  ctx.type = binary.contentType;
  ctx.body = binary.data;
}

/** The resource as served: attachment URLs on this server's base (absolute unless switched), broken when switched. */
function served(world: World, brandKey: string, resource: Resource): Resource {
  const key = `${resource.resourceType}/${resource.id}`;
  const absolute = world.switches.attachmentUrls === 'absolute';
  const invalid = world.switches.invalidResources.includes(key);
  if (!absolute && !invalid) return resource;
  const copy = JSON.parse(JSON.stringify(resource)) as Resource;
  if (absolute) {
    const base = fhirBase(world, brandKey);
    const attachments = [
      ...((copy.content as { attachment: Record<string, unknown> }[] | undefined) ?? []).map((c) => c.attachment),
      ...((copy.presentedForm as Record<string, unknown>[] | undefined) ?? []),
    ];
    for (const attachment of attachments)
      if (typeof attachment.url === 'string' && attachment.url.startsWith('Binary/'))
        attachment.url = `${base}/${attachment.url}`;
  }
  if (invalid) copy.status = 123;
  return copy;
}

function hasCategory(resource: Resource, wanted: string[]): boolean {
  const categories = (Array.isArray(resource.category) ? resource.category : [resource.category]) as
    { coding?: { system?: string; code?: string }[] }[] | undefined[];
  return categories.some((c) =>
    (c?.coding ?? []).some((coding) =>
      wanted.some((w) => w === coding.code || w === `${coding.system}|${coding.code}`),
    ),
  );
}
