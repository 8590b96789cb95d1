// The observation gateway as a FHIR R4 server (docs/api.md, "The gateway as a FHIR server"): each connection is a
// FHIR base, /api/sdk/v1/fhir/connections/{connectionId}, that a stock FHIR client can use. It is another face of the
// gateway's one search (GatewayService): the same key, the same checks in the same order, the same filtering and
// totals. Only the way parameters arrive (FHIR search parameters, in the query or a form body) and errors leave
// (OperationOutcome) differ.
import { Type } from '@sinclair/typebox';
import type { Context } from 'koa';
import { acceptAjv } from '#core/schema.js';
import { principalOf } from '../../shared/http/auth.js';
import { invalidField, notFound, type FieldError } from '../../shared/http/errors.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import type { KeyedRoute } from '../../shared/http/keyed-fast-path.js';
import { nodeRequestOrigin } from '../../shared/http/origin.js';
import { addSchemaErrors, throwIfAny, validate } from '../../shared/http/validate.js';
import { resourceOfTail } from './gateway/entries.js';
import { SearchBody, SearchSet } from './gateway/schema.js';
import { gatewayScope, searchAnswer, type GatewayRouteDeps } from './sdk.routes.js';
import { FHIR_JSON, OperationOutcome } from './fhir/fhir-outcomes.js';
import { formParameters, parameterList, recordAnswer } from './fhir-records.routes.js';
import { capabilityStatement } from './fhir/capability.js';
import type { RecordSearch } from './gateway/record-search.js';

const tags = ['FHIR server'];
const FORM = 'application/x-www-form-urlencoded';

const Params = Type.Object({ connectionId: Type.String({ minLength: 1, maxLength: 64 }) });
const ReadParams = Type.Object({
  connectionId: Type.String({ minLength: 1, maxLength: 64 }),
  id: Type.String({ pattern: '^[A-Za-z0-9\\-.]{1,64}$', description: 'The Observation id (a FHIR id).' }),
});

/** The search parameters this server takes, besides `cursor` (its own `next` links) and `_format`. */
const SEARCH_PARAMETERS = ['code', 'category', 'date', '_count', '_sort'] as const;
const JSON_FORMATS = new Set(['json', 'application/json', 'application/fhir+json', 'application/json+fhir']);
/** More parameters than a search can mean (10 dates and one of each other): refused before they are read. */
const MAX_PARAMETERS = 32;
const checkSearch = acceptAjv.compile(SearchBody);

/** The FHIR search parameters, as the query or a form body carries them (each but `date` at most once). */
const FhirSearch = Type.Object({
  code: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'FHIR token; a comma is OR.' })),
  category: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'FHIR token; a comma is OR.' })),
  date: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 40 }), {
      maxItems: 10,
      description: 'Prefixed FHIR dates (`ge2024-01-01`); repeated, they combine with AND.',
    }),
  ),
  _count: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Page size; 50 when absent.' })),
  _sort: Type.Optional(Type.Union([Type.Literal('date'), Type.Literal('-date')])),
  _format: Type.Optional(Type.String({ description: 'json, application/json or application/fhir+json.' })),
  cursor: Type.Optional(Type.String({ description: "A `next` link's cursor: it carries every other parameter." })),
});
const OUTCOMES = {
  description:
    'An OperationOutcome (`application/fhir+json`) with the status the gateway would answer: `issue[0].code` the FHIR issue type, `issue[0].details.text` the Portico error code or denial reason.',
  contentType: 'application/fhir+json',
};

const searchDescription = (where: string) =>
  `The gateway's search (\`searchObservations\`) with FHIR search parameters ${where}: \`code\` and \`category\` (tokens; a comma is OR; each at most once), \`date\` (prefixed dates; repeated, they combine with AND, at most 10), \`_count\` (1–100, 50 when absent), \`_sort\` (\`date\` or \`-date\`), and \`_format\` (json only). Any other parameter is refused with 400 rather than ignored, so a filter the server would not apply never widens an answer. The same checks in the same order and the same filtering and \`total\`; the \`next\` link stays on this base.`;

/** What the gateway's own search answers (with `_format` and `_pretty`); any other parameter goes to the record search. */
const GATEWAY_PARAMETERS = new Set<string>([...SEARCH_PARAMETERS, 'cursor', '_format', '_pretty']);

export function fhirRoutes(sdk: ApiRouter, deps: GatewayRouteDeps & { recordSearch: RecordSearch }): void {
  const { gateway, requireKey, publicBaseUrl, trustProxy } = deps;
  // The path names the connection: a scope refusal is recorded in its user's access log.
  const scoped = gatewayScope(gateway, () => ({ interaction: 'search', type: 'Observation' }));
  const scopedRead = gatewayScope(gateway, () => ({ interaction: 'read', type: 'Observation' }));
  const searchResponses = {
    200: {
      description: 'A FHIR Bundle, `application/fhir+json`.',
      schema: SearchSet,
      contentType: 'application/fhir+json',
    },
  };
  const respond = async (ctx: Context, connectionId: string, parameters: URLSearchParams) => {
    // A search with any parameter beyond the gateway's is the record search's (fhir-records.routes.ts).
    if ([...parameters.keys()].some((name) => !GATEWAY_PARAMETERS.has(name))) {
      const page = await deps.recordSearch.search(
        principalOf(ctx),
        String(ctx.state.requestId),
        connectionId,
        'Observation',
        parameterList(parameters),
      );
      const answer = recordAnswer(page, ctx.req, publicBaseUrl, trustProxy);
      ctx.set(answer.headers);
      ctx.body = answer.body;
      return;
    }
    const input = searchInput(connectionId, parameters);
    const page = await gateway.search(principalOf(ctx), String(ctx.state.requestId), input);
    const answer = searchAnswer(page, ctx.req, publicBaseUrl, trustProxy, 'fhir');
    ctx.set(answer.headers);
    ctx.body = answer.body;
  };

  const metadata = validate({ params: Params }); // checks the id's length: the statement is the same for any
  sdk.get(
    '/fhir/connections/:connectionId/metadata',
    {
      operationId: 'fhirCapabilities',
      summary: "The connection's FHIR CapabilityStatement",
      description:
        'What this FHIR base supports (FHIR 4.0.1, JSON): every record type with `read` and `search-type` and its search parameters, `Patient/{id}/$everything`, and `Binary` read. It needs no key and says nothing about the connection: any id gets the same statement.',
      tags,
      errors: { ...OUTCOMES, schema: OperationOutcome },
      responses: {
        200: {
          description: 'A CapabilityStatement, `application/fhir+json`.',
          schema: Type.Object({ resourceType: Type.Literal('CapabilityStatement') }, { additionalProperties: true }),
          contentType: 'application/fhir+json',
        },
      },
    },
    metadata,
    (ctx) => {
      ctx.set('Cache-Control', 'public, max-age=3600');
      ctx.type = FHIR_JSON;
      ctx.body = capabilityStatement();
    },
  );

  // FHIR allows GET on `_search` too; both are registered before the read, whose `:id` would otherwise take "_search".
  for (const [path, operationId, how] of [
    ['Observation', 'fhirSearchObservations', 'GET'],
    ['Observation/_search', 'fhirGetSearchObservations', 'GET on _search'],
  ] as const) {
    const search = validate({ params: Params });
    sdk.get(
      `/fhir/connections/:connectionId/${path}`,
      {
        operationId,
        summary: `Search the connection's observations (FHIR search, ${how})`,
        description: searchDescription('in the query'),
        tags,
        input: { query: FhirSearch },
        errors: { ...OUTCOMES, schema: OperationOutcome },
        responses: searchResponses,
      },
      requireKey('sdk-secret'),
      scoped,
      search,
      (ctx) => respond(ctx, search.get(ctx).params.connectionId, new URLSearchParams(ctx.querystring)),
    );
  }

  const postSearch = validate({ params: Params });
  sdk.post(
    '/fhir/connections/:connectionId/Observation/_search',
    {
      operationId: 'fhirPostSearchObservations',
      summary: "Search the connection's observations (FHIR search, POST form)",
      description: `${searchDescription(`in an \`${FORM}\` body (and the query, which is read first)`)} A body over 1 MiB is refused with 413.`,
      tags,
      input: { body: FhirSearch, bodyMediaTypes: [FORM] },
      errors: { ...OUTCOMES, schema: OperationOutcome },
      responses: searchResponses,
    },
    requireKey('sdk-secret'),
    scoped,
    postSearch,
    async (ctx) => {
      await respond(ctx, postSearch.get(ctx).params.connectionId, await formParameters(ctx));
    },
  );

  const read = validate({ params: ReadParams });
  sdk.get(
    '/fhir/connections/:connectionId/Observation/:id',
    {
      operationId: 'fhirReadObservation',
      summary: 'Read one observation (what an entry’s `fullUrl` names)',
      description:
        "The same checks as a search, then the observation when the install's grants let the app see it (LOINC codes, labels, look-back window); 404 when it does not exist or the grants hide it, alike.",
      tags,
      errors: { ...OUTCOMES, schema: OperationOutcome },
      responses: {
        200: {
          description: 'The Observation, `application/fhir+json`.',
          schema: Type.Object({ resourceType: Type.Literal('Observation') }, { additionalProperties: true }),
          contentType: 'application/fhir+json',
        },
      },
    },
    requireKey('sdk-secret'),
    scopedRead,
    read,
    async (ctx) => {
      const { connectionId, id } = read.get(ctx).params;
      const found = await gateway.read(principalOf(ctx), String(ctx.state.requestId), connectionId, id);
      if (!found) throw notFound('observation');
      ctx.set('Cache-Control', 'no-store');
      ctx.type = FHIR_JSON;
      ctx.body = resourceOfTail(found);
    },
  );
}

/**
 * `GET {base}/Observation` on the node:http fast path (shared/http/keyed-fast-path.ts): the same choice, search and
 * answer as its Koa route above (the gateway's own search, or the record search for any other parameter). Every
 * denial or problem is left to Koa, which answers and logs it.
 */
export function fhirFastRoutes({
  gateway,
  recordSearch,
  publicBaseUrl,
  trustProxy,
}: Omit<GatewayRouteDeps, 'requireKey'> & { recordSearch: RecordSearch }): KeyedRoute[] {
  return [
    {
      operationId: 'fhirSearchObservations',
      kind: 'ak',
      scope: 'observation:read',
      answer: async ({ principal, requestId, params: [connectionId], query, req }) => {
        if (principal.appId === null) return undefined;
        nodeRequestOrigin(req, publicBaseUrl, trustProxy); // (a refused origin is a 400 before anything is read)
        const parameters = new URLSearchParams(query);
        if ([...parameters.keys()].some((name) => !GATEWAY_PARAMETERS.has(name))) {
          const page = await recordSearch.search(
            principal,
            requestId,
            connectionId!,
            'Observation',
            parameterList(parameters),
            { logDenials: false },
          );
          return { status: 200 as const, ...recordAnswer(page, req, publicBaseUrl, trustProxy) };
        }
        const input = searchInput(connectionId!, parameters);
        const page = await gateway.search(principal, requestId, input, { logDenials: false });
        return searchAnswer(page, req, publicBaseUrl, trustProxy, 'fhir');
      },
    },
  ];
}

/** What the gateway's search takes, from FHIR search parameters (400, listing each problem, when they do not fit). */
function searchInput(connectionId: string, parameters: URLSearchParams): { body: SearchBody } {
  const errors: FieldError[] = [];
  const input: Record<string, unknown> = { connectionId };
  // Grouped in one pass, after counting: a form body of a megabyte can hold 150,000 names.
  let count = 0;
  const byName = new Map<string, string[]>();
  for (const [name, value] of parameters) {
    if (++count > MAX_PARAMETERS)
      throw invalidField('query', name, `is one parameter too many: a search takes at most ${MAX_PARAMETERS}`);
    const values = byName.get(name);
    if (values) values.push(value);
    else byName.set(name, [value]);
  }
  for (const [name, values] of byName) {
    if (name === '_format') {
      if (!values.every((value) => JSON_FORMATS.has(value)))
        errors.push({ in: 'query', name, detail: 'only JSON is served (json, application/fhir+json)' });
    } else if (name === '_pretty') {
      // Formatting only: answers are compact either way.
    } else if (name === 'date') input.date = values;
    else if (!(SEARCH_PARAMETERS as readonly string[]).includes(name) && name !== 'cursor')
      errors.push({ in: 'query', name, detail: `is not a search parameter here (${SEARCH_PARAMETERS.join(', ')})` });
    else if (values.length > 1)
      errors.push({ in: 'query', name, detail: 'must be given at most once (in a token, a comma is OR)' });
    else if (name === '_count')
      if (/^[0-9]{1,9}$/.test(values[0]!)) input._count = Number(values[0]);
      else errors.push({ in: 'query', name, detail: 'must be an integer written in decimal digits' });
    else input[name] = values[0];
  }
  throwIfAny(errors);
  if (!checkSearch(input)) {
    addSchemaErrors(errors, 'query', checkSearch);
    throwIfAny(errors.map((error) => ({ ...error, name: error.name.replace(/^\//, '').split('/')[0]! })));
  }
  return { body: input as SearchBody };
}
