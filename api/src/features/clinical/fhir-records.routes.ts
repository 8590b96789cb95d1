// Every record type on a connection's FHIR base (docs/api.md, "The whole record"): `GET {base}/{type}?…`,
// `GET|POST {base}/{type}/_search` and `GET {base}/{type}/{id}`. Observation keeps its own operations
// (fhir.routes.ts) for the observation gateway's parameters; a search of it with any other parameter comes here.
// Registered after them, so the paths they name match them first. Errors are OperationOutcomes (fhir-outcomes.ts).
import type { IncomingMessage } from 'node:http';
import { Type } from '@sinclair/typebox';
import type { Context } from 'koa';
import { principalOf } from '../../shared/http/auth.js';
import { invalidField, notFound } from '../../shared/http/errors.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { nodeRequestOrigin, requestOrigin } from '../../shared/http/origin.js';
import { MAX_BODY_BYTES, readBody, validate } from '../../shared/http/validate.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import type { KeyedRoute } from '../../shared/http/keyed-fast-path.js';
import { isRecordType, RECORD_TYPES } from './record-types.js';
import { includedTail, resourceOfTail } from './gateway/entries.js';
import type { RecordPage, RecordSearch } from './gateway/record-search.js';
import { MAX_COUNT } from './gateway/record-walks.js';
import type { GatewayService } from './gateway/service.js';
import { fhirBasePath, gatewayScope } from './sdk.routes.js';
import { FHIR_JSON, OperationOutcome } from './fhir/fhir-outcomes.js';

const tags = ['FHIR server'];
const FORM = 'application/x-www-form-urlencoded';
/** More parameters than a search can mean: refused before they are read. */
export const MAX_PARAMETERS = 32;

const TypeParams = Type.Object({
  connectionId: Type.String({ minLength: 1, maxLength: 64 }),
  type: Type.String({
    minLength: 1,
    maxLength: 64,
    description: `A record type: ${RECORD_TYPES.join(', ')}. Any other is 404.`,
  }),
});
const ReadParams = Type.Object({
  connectionId: Type.String({ minLength: 1, maxLength: 64 }),
  type: TypeParams.properties.type,
  id: Type.String({ pattern: '^[A-Za-z0-9\\-.]{1,64}$', description: 'The resource id (a FHIR id).' }),
});
const EverythingParams = Type.Object({
  connectionId: Type.String({ minLength: 1, maxLength: 64 }),
  id: Type.String({ pattern: '^[A-Za-z0-9\\-.]{1,64}$', description: "The connection's patient's id." }),
});
const BinaryParams = Type.Object({
  connectionId: Type.String({ minLength: 1, maxLength: 64 }),
  id: Type.String({ pattern: '^[A-Za-z0-9\\-.]{1,64}$', description: 'The attachment’s Binary id.' }),
});
const SearchSet = Type.Object(
  { resourceType: Type.Literal('Bundle'), type: Type.Literal('searchset') },
  { additionalProperties: true },
);
const OUTCOMES = {
  description:
    'An OperationOutcome (`application/fhir+json`): `issue[0].code` the FHIR issue type, `issue[0].details.text` the Portico error code or denial reason.',
  contentType: 'application/fhir+json',
  schema: OperationOutcome,
};
const SEARCH_DESCRIPTION = `A search of one record type, answered as a FHIR searchset. The same checks in the same order as the observation gateway, with the type asked for in place of Observation (\`RESOURCE_TYPE_NOT_GRANTED\` unless the install's \`resourceTypes\` names it or is \`["*"]\`); then the install's labels and look-back window (by the type's clinical date; a resource without one is kept, except an Observation) and, for an Observation, its LOINC codes, before anything is counted or paged. Parameters: every R4 search parameter of the type and US Core 6.1's (token, date, reference, string, quantity, uri, number; \`:missing\` on all, \`:not\` on tokens, \`:exact\` and \`:contains\` on strings), \`_id\`, \`_lastUpdated\` (when Portico stored the version), \`_count\` (1–${MAX_COUNT}, 50 when absent), \`_sort\` (\`_lastUpdated\` or the type's clinical date parameter, \`-\` for descending; newest clinical date first when absent), \`_total\` (\`accurate\`, \`none\`), \`_summary=count\`, \`_format\` (JSON). A repeated parameter is AND, a comma OR. Any other parameter, modifier or prefix is refused with 400, so a filter the server would not apply never widens an answer. \`next\` links carry a signed \`_cursor\` bound to the key's app.`;

/** What the routes are given. */
export type RecordRouteDeps = { gateway: GatewayService; recordSearch: RecordSearch } & Pick<
  RouteGuards,
  'requireKey' | 'publicBaseUrl' | 'trustProxy'
>;

export function recordRoutes(sdk: ApiRouter, deps: RecordRouteDeps): void {
  const { recordSearch, requireKey, publicBaseUrl, trustProxy } = deps;
  // The path names the connection: a scope refusal is recorded in its user's access log (docs/api.md, "The access
  // log"), as what the route would have read; a type Portico does not serve reads nothing (404 after the scope).
  const ofType = (interaction: 'search' | 'read') => (params: Record<string, string>) =>
    params.type !== undefined && isRecordType(params.type) ? { interaction, type: params.type } : undefined;
  const scoped = gatewayScope(deps.gateway, ofType('search'));
  const respond = async (ctx: Context, connectionId: string, type: string, parameters: URLSearchParams) => {
    if (!isRecordType(type)) throw notFound('resource type');
    const page = await recordSearch.search(
      principalOf(ctx),
      String(ctx.state.requestId),
      connectionId,
      type,
      parameterList(parameters),
    );
    const answer = recordAnswer(page, ctx.req, publicBaseUrl, trustProxy);
    ctx.set(answer.headers);
    ctx.body = answer.body;
  };
  const searchResponses = {
    200: { description: 'A FHIR Bundle, `application/fhir+json`.', schema: SearchSet, contentType: FHIR_JSON },
  };

  for (const [path, operationId, how] of [
    [':type', 'fhirSearchRecords', 'GET'],
    [':type/_search', 'fhirGetSearchRecords', 'GET on _search'],
  ] as const) {
    const search = validate({ params: TypeParams });
    sdk.get(
      `/fhir/connections/:connectionId/${path}`,
      {
        operationId,
        summary: `Search one record type of the connection (FHIR search, ${how})`,
        description: SEARCH_DESCRIPTION,
        tags,
        errors: OUTCOMES,
        responses: searchResponses,
      },
      requireKey('sdk-secret'),
      scoped,
      search,
      (ctx) => {
        const { connectionId, type } = search.get(ctx).params;
        return respond(ctx, connectionId, type, new URLSearchParams(ctx.querystring));
      },
    );
  }

  const postSearch = validate({ params: TypeParams });
  sdk.post(
    '/fhir/connections/:connectionId/:type/_search',
    {
      operationId: 'fhirPostSearchRecords',
      summary: 'Search one record type of the connection (FHIR search, POST form)',
      description: `${SEARCH_DESCRIPTION} The parameters come in an \`${FORM}\` body (and the query, read first); a body over 1 MiB is 413.`,
      tags,
      input: { body: Type.Object({}, { additionalProperties: true }), bodyMediaTypes: [FORM] },
      errors: OUTCOMES,
      responses: searchResponses,
    },
    requireKey('sdk-secret'),
    scoped,
    postSearch,
    async (ctx) => {
      const { connectionId, type } = postSearch.get(ctx).params;
      await respond(ctx, connectionId, type, await formParameters(ctx));
    },
  );

  const everything = validate({ params: EverythingParams });
  sdk.get(
    '/fhir/connections/:connectionId/Patient/:id/$everything',
    {
      operationId: 'fhirPatientEverything',
      summary: "The patient's whole record (`Patient/{id}/$everything`)",
      description: `The connection's patient and every record of the types the install may read (others are left out, not refused), referenced ones (Medication, Practitioner, Organization…) included, each once, after the same checks as a search and with the same grants per type; paged by \`next\` links (\`_count\` 1–${MAX_COUNT}, 50 when absent), the patient first, then type by type. \`_type\` (comma-separated record types) keeps those types only, \`_since\` (a FHIR instant or date) the records Portico stored at or after it. \`{id}\` must be the connection's patient (else 404).`,
      tags,
      errors: OUTCOMES,
      responses: searchResponses,
    },
    requireKey('sdk-secret'),
    gatewayScope(deps.gateway, () => ({ interaction: 'everything', type: null })),
    everything,
    async (ctx) => {
      const { connectionId, id } = everything.get(ctx).params;
      const page = await recordSearch.everything(
        principalOf(ctx),
        String(ctx.state.requestId),
        connectionId,
        id,
        parameterList(new URLSearchParams(ctx.querystring)),
      );
      const answer = recordAnswer(page, ctx.req, publicBaseUrl, trustProxy, id);
      ctx.set(answer.headers);
      ctx.body = answer.body;
    },
  );

  const binary = validate({ params: BinaryParams });
  sdk.get(
    '/fhir/connections/:connectionId/Binary/:id',
    {
      operationId: 'fhirReadBinary',
      summary: 'An attachment a sync fetched (`Binary/{id}`)',
      description:
        "The bytes of a clinical note's or report's attachment, with their content type, or a FHIR `Binary` resource (base64 `data`) when `Accept` asks for `application/fhir+json`. The same checks as a search; then the attachment is served only when a DocumentReference or DiagnosticReport the install may see (its types, labels and look-back window) names it as `Binary/{id}`; 404 otherwise, alike.",
      tags,
      errors: OUTCOMES,
      responses: {
        200: {
          description: 'The attachment: its bytes, or a Binary resource.',
          schema: Type.Object({ resourceType: Type.Literal('Binary') }, { additionalProperties: true }),
          contentType: FHIR_JSON,
        },
      },
    },
    requireKey('sdk-secret'),
    gatewayScope(deps.gateway, () => ({ interaction: 'binary', type: 'Binary' })),
    binary,
    async (ctx) => {
      const { connectionId, id } = binary.get(ctx).params;
      const found = await recordSearch.binary(principalOf(ctx), String(ctx.state.requestId), connectionId, id);
      if (!found) throw notFound('binary');
      ctx.set('Cache-Control', 'no-store');
      ctx.set('X-Content-Type-Options', 'nosniff');
      if (/application\/(fhir\+)?json/.test(ctx.get('accept'))) {
        ctx.type = FHIR_JSON;
        ctx.body = { resourceType: 'Binary', id, contentType: found.contentType, data: found.data.toString('base64') };
        return;
      }
      ctx.type = found.contentType;
      // Never rendered inline by a browser: an attachment is the health system's content, not Portico's page.
      ctx.set('Content-Disposition', 'attachment');
      ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
      ctx.body = found.data;
    },
  );

  const read = validate({ params: ReadParams });
  sdk.get(
    '/fhir/connections/:connectionId/:type/:id',
    {
      operationId: 'fhirReadRecord',
      summary: 'Read one record (what an entry’s `fullUrl` names)',
      description:
        "The same checks as a search of its type, then the resource when the install's grants let the app see it; 404 when it does not exist or the grants hide it, alike. `Patient/{id}` is the connection's patient.",
      tags,
      errors: OUTCOMES,
      responses: {
        200: {
          description: 'The resource, `application/fhir+json`.',
          schema: Type.Object({ resourceType: Type.String() }, { additionalProperties: true }),
          contentType: FHIR_JSON,
        },
      },
    },
    requireKey('sdk-secret'),
    gatewayScope(deps.gateway, ofType('read')),
    read,
    async (ctx) => {
      const { connectionId, type, id } = read.get(ctx).params;
      if (!isRecordType(type)) throw notFound('resource type');
      const found = await recordSearch.read(principalOf(ctx), String(ctx.state.requestId), connectionId, type, id);
      if (!found) throw notFound('resource');
      ctx.set('Cache-Control', 'no-store');
      ctx.type = FHIR_JSON;
      ctx.body = resourceOfTail(found);
    },
  );
}

/** A form-encoded search's parameters: the query's, then the body's (at most 1 MiB: else 413). */
export async function formParameters(ctx: Context): Promise<URLSearchParams> {
  const parameters = new URLSearchParams(ctx.querystring);
  const body = await readBody(ctx, [FORM], MAX_BODY_BYTES);
  if (body !== undefined)
    for (const [name, value] of new URLSearchParams(body.toString('utf8'))) parameters.append(name, value);
  return parameters;
}

/** The parameters in order, at most MAX_PARAMETERS (a form body of a megabyte can hold 150,000 names). */
export function parameterList(parameters: URLSearchParams): [string, string][] {
  const list: [string, string][] = [];
  for (const [name, value] of parameters) {
    if (list.length === MAX_PARAMETERS)
      throw invalidField('query', name, `is one parameter too many: a search takes at most ${MAX_PARAMETERS}`);
    list.push([name, value]);
  }
  return list;
}

/**
 * A search of one record type on the node:http fast path (shared/http/keyed-fast-path.ts), answered by the same
 * search and answer as its Koa route. Observation (whose Koa route decides between the gateway's own search and this
 * one), a type Portico does not serve, and every denial or problem are left to Koa, which answers and logs them.
 */
export function recordFastRoutes({
  recordSearch,
  publicBaseUrl,
  trustProxy,
}: Omit<RecordRouteDeps, 'requireKey' | 'gateway'>): KeyedRoute[] {
  return [
    {
      operationId: 'fhirSearchRecords',
      kind: 'ak',
      scope: 'observation:read',
      // `{base}/metadata` and `{base}/Observation` are other routes' (the statement needs no key).
      accepts: ([, type]) => type !== 'Observation' && isRecordType(type),
      answer: async ({ principal, requestId, params: [connectionId, type], query, req }) => {
        if (principal.appId === null) return undefined;
        nodeRequestOrigin(req, publicBaseUrl, trustProxy); // (a refused origin is a 400 before anything is read)
        const parameters = parameterList(new URLSearchParams(query));
        const page = await recordSearch.search(principal, requestId, connectionId!, type!, parameters, {
          logDenials: false,
        });
        return { status: 200 as const, ...recordAnswer(page, req, publicBaseUrl, trustProxy) };
      },
    },
  ];
}

/** The 200 of a search of a record type: the Bundle's bytes and headers; links stay on the type's search. */
export function recordAnswer(
  page: RecordPage,
  req: IncomingMessage,
  publicBaseUrl: string | undefined,
  trustProxy: boolean,
  /** For a `$everything` page: the patient's id (its links continue it). */
  everything?: string,
) {
  const { origin, vary } = requestOrigin(
    publicBaseUrl,
    req.headers,
    (req.socket as { encrypted?: boolean }).encrypted === true,
    trustProxy,
  );
  const fhirBase = `${origin}${fhirBasePath(page.connectionId)}`;
  const searched =
    page.type === 'Patient' && everything
      ? `${fhirBase}/Patient/${everything}/$everything`
      : `${fhirBase}/${page.type}`;
  const link = (cursor: string) => `${searched}?_cursor=${encodeURIComponent(cursor)}`;
  const links = [
    { relation: 'self', url: link(page.self) },
    ...(page.next ? [{ relation: 'next', url: link(page.next) }] : []),
  ];
  return {
    headers: {
      'Cache-Control': 'no-store',
      'Content-Type': 'application/fhir+json; charset=utf-8',
      ...(vary.length > 0 && { Vary: vary.join(', ') }),
    },
    body: searchsetBody(page, links, fhirBase),
  };
}

/**
 * The searchset as bytes: its matches, then what includes brought in, each entry's fullUrl on its own type (the
 * entries' tails are UTF-8 already: connection-index.ts); no `entry` at all when there is none.
 */
function searchsetBody(page: RecordPage, links: { relation: string; url: string }[], fhirBase: string): Buffer {
  const total = page.total === undefined ? '' : `"total":${page.total},`;
  const head = `{"resourceType":"Bundle","type":"searchset",${total}"link":${JSON.stringify(links)}`;
  const entries = [
    ...page.items.map((item) => ({ item, tail: item.tail })),
    ...page.included.map((item) => ({ item, tail: includedTail(item) })),
  ];
  if (entries.length === 0) return Buffer.from(`${head}}`);
  const parts: Buffer[] = [Buffer.from(`${head},"entry":[`)];
  entries.forEach(({ item, tail }, i) => {
    parts.push(
      Buffer.from(`${i === 0 ? '' : ','}{"fullUrl":${JSON.stringify(`${fhirBase}/${item.type}/`).slice(0, -1)}`),
      tail,
    );
  });
  parts.push(Buffer.from(']}'));
  return Buffer.concat(parts);
}
