// ApiRouter registers routes on @koa/router and, from the same declarations, builds /openapi.json: the
// schemas ajv validates with are the schemas the document shows. Guards describe themselves through an
// `openapi` property (security, scopes, headers), so the document cannot drift from what is enforced.
import { METHODS } from 'node:http';
import Router from '@koa/router';
import type { Middleware } from 'koa';
import type { TObject, TSchema } from '@sinclair/typebox';

export interface HeaderDoc {
  name: string;
  description: string;
  schema?: Record<string, unknown>;
}

export interface OperationPatch {
  security?: string;
  scopes?: string[];
  params?: TObject;
  query?: TObject;
  body?: TSchema;
  bodyMediaTypes?: string[];
  /** The body may be left out (validate()'s `bodyOptional`). */
  bodyOptional?: boolean;
  requestHeaders?: HeaderDoc[];
  notes?: string[];
}

export interface ResponseDoc {
  description: string;
  schema?: TSchema;
  contentType?: string;
  headers?: string[];
}

export interface OperationDoc {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  responses: Record<number, ResponseDoc>;
  /** Request headers the handler itself reads (guards document their own). */
  requestHeaders?: HeaderDoc[];
  /** Parameters (and a body) the handler checks itself (without a validate() guard), from the schemas it checks with. */
  input?: Pick<OperationPatch, 'params' | 'query' | 'body' | 'bodyMediaTypes'>;
  /** How its errors are answered, when not as problem details (the FHIR face answers OperationOutcomes). */
  errors?: ResponseDoc;
}

type Documented = Middleware & { openapi?: OperationPatch };

interface Registered {
  method: string;
  path: string;
  doc: OperationDoc;
  patches: OperationPatch[];
}

export class ApiRouter {
  readonly router: Router;
  readonly operations: Registered[] = [];

  constructor(readonly prefix: string) {
    // Every method node:http accepts counts as one the API knows, so allowedMethods() answers a method a
    // path does not serve (TRACE, PROPFIND, …) with 405 and Allow, like PUT, instead of its bare 501
    // text/plain; a path nothing serves stays 404. Both become problem details in problemMiddleware.
    this.router = new Router({ prefix, methods: [...METHODS] });
  }

  get(path: string, doc: OperationDoc, ...chain: Documented[]): this {
    return this.add('get', path, doc, chain);
  }
  post(path: string, doc: OperationDoc, ...chain: Documented[]): this {
    return this.add('post', path, doc, chain);
  }
  patch(path: string, doc: OperationDoc, ...chain: Documented[]): this {
    return this.add('patch', path, doc, chain);
  }
  delete(path: string, doc: OperationDoc, ...chain: Documented[]): this {
    return this.add('delete', path, doc, chain);
  }

  /** Its routes as registered: operation, method and full path template (what the node:http fast path answers for). */
  table(): { operationId: string; method: string; path: string }[] {
    return this.operations.map((o) => ({ operationId: o.doc.operationId, method: o.method, path: o.path }));
  }

  /** Shares guards between the routes of a surface; documented like the route's own guards. */
  use(...guards: Documented[]): this {
    this.shared.push(...guards);
    return this;
  }
  private readonly shared: Documented[] = [];

  private add(method: 'get' | 'post' | 'patch' | 'delete', path: string, doc: OperationDoc, chain: Documented[]): this {
    const all = [...this.shared, ...chain];
    this.router[method](path, ...(all as Middleware[]));
    this.operations.push({
      method,
      path: this.prefix + path,
      doc,
      patches: all.map((m) => m.openapi).filter((p): p is OperationPatch => p !== undefined),
    });
    return this;
  }
}

const PROBLEM_REF = { $ref: '#/components/schemas/Problem' };

/** An OpenAPI 3.1 webhook: a request Portico makes to its customers. */
export interface WebhookDoc {
  name: string;
  summary: string;
  description: string;
  headers: HeaderDoc[];
  body: TSchema;
  responses: Record<string, string>;
}

export function buildOpenApi(
  routers: ApiRouter[],
  info: { version: string; serverUrl?: string },
  problemSchema: TSchema,
  notes: string[],
  webhooks: WebhookDoc[] = [],
): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const router of routers) {
    for (const op of router.operations) {
      const merged = mergePatches([
        ...(op.doc.input ? [op.doc.input] : []),
        ...op.patches,
        { requestHeaders: op.doc.requestHeaders },
      ]);
      const openPath = op.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      const parameters: unknown[] = [];
      for (const [name, schema] of Object.entries(merged.params?.properties ?? {})) {
        parameters.push({ name, in: 'path', required: true, schema: strip(schema) });
      }
      // A parameter with a default is required by the TypeBox object (its type has it) but not of the client.
      const requiredQuery = new Set(merged.query?.required ?? []);
      for (const [name, schema] of Object.entries(merged.query?.properties ?? {})) {
        const required = requiredQuery.has(name) && (schema as { default?: unknown }).default === undefined;
        parameters.push({
          name,
          in: 'query',
          required,
          schema: strip(schema),
          description: (schema as { description?: string }).description,
        });
      }
      for (const header of merged.requestHeaders ?? []) {
        parameters.push({
          name: header.name,
          in: 'header',
          required: false,
          description: header.description,
          schema: header.schema ?? { type: 'string' },
        });
      }
      const responses: Record<string, unknown> = {};
      for (const [status, response] of Object.entries(op.doc.responses)) {
        const headers = Object.fromEntries((response.headers ?? []).map((h) => [h, { schema: { type: 'string' } }]));
        responses[status] = {
          description: response.description,
          ...(response.headers ? { headers } : {}),
          ...(response.schema
            ? { content: { [response.contentType ?? 'application/json']: { schema: strip(response.schema) } } }
            : {}),
        };
      }
      responses.default = op.doc.errors
        ? {
            description: op.doc.errors.description,
            content: { [op.doc.errors.contentType ?? 'application/json']: { schema: strip(op.doc.errors.schema!) } },
          }
        : {
            description: 'Problem details (RFC 9457).',
            content: { 'application/problem+json': { schema: PROBLEM_REF } },
          };
      const description = [op.doc.description, ...(merged.notes ?? [])].filter(Boolean).join('\n\n');
      (paths[openPath] ??= {})[op.method] = {
        operationId: op.doc.operationId,
        summary: op.doc.summary,
        ...(description ? { description } : {}),
        tags: op.doc.tags,
        ...(merged.security ? { security: [{ [merged.security]: merged.scopes ?? [] }] } : { security: [] }),
        ...(merged.scopes?.length ? { 'x-required-scopes': merged.scopes } : {}),
        parameters,
        ...(merged.body
          ? {
              requestBody: {
                required: !merged.bodyOptional,
                content: Object.fromEntries(
                  (merged.bodyMediaTypes ?? ['application/json']).map((t) => [t, { schema: strip(merged.body!) }]),
                ),
              },
            }
          : {}),
        responses,
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Portico API',
      version: info.version,
      description: notes.join('\n\n'),
    },
    ...(info.serverUrl ? { servers: [{ url: info.serverUrl }] } : {}),
    paths,
    webhooks: Object.fromEntries(
      webhooks.map((w) => [
        w.name,
        {
          post: {
            summary: w.summary,
            description: w.description,
            parameters: w.headers.map((h) => ({
              name: h.name,
              in: 'header',
              required: true,
              description: h.description,
              schema: h.schema ?? { type: 'string' },
            })),
            requestBody: { required: true, content: { 'application/json': { schema: strip(w.body) } } },
            responses: Object.fromEntries(
              Object.entries(w.responses).map(([status, description]) => [status, { description }]),
            ),
          },
        },
      ]),
    ),
    components: {
      schemas: { Problem: strip(problemSchema) },
      securitySchemes: {
        platformKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'Secret platform key `sk_…` of a customer account.',
        },
        publishableKey: { type: 'http', scheme: 'bearer', description: 'Publishable app key `pk_…` (client apps).' },
        appSecretKey: { type: 'http', scheme: 'bearer', description: 'Secret app key `ak_…` (observation gateway).' },
        adminToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'PORTICO_ADMIN_TOKEN; the admin surface answers 404 when unset.',
        },
      },
    },
  };
}

function mergePatches(patches: OperationPatch[]): OperationPatch {
  const merged: OperationPatch = {};
  for (const patch of patches) {
    if (patch.security) merged.security = patch.security;
    if (patch.scopes) merged.scopes = [...(merged.scopes ?? []), ...patch.scopes];
    if (patch.params) merged.params = patch.params;
    if (patch.query) merged.query = patch.query;
    if (patch.body) merged.body = patch.body;
    if (patch.bodyMediaTypes && patch.body) merged.bodyMediaTypes = patch.bodyMediaTypes;
    if (patch.body) merged.bodyOptional = patch.bodyOptional === true;
    if (patch.requestHeaders) merged.requestHeaders = [...(merged.requestHeaders ?? []), ...patch.requestHeaders];
    if (patch.notes) merged.notes = [...(merged.notes ?? []), ...patch.notes];
  }
  return merged;
}

/** TypeBox schemas carry symbol keys; JSON serialisation drops them, which is what the document wants. */
function strip(schema: TSchema): unknown {
  return JSON.parse(JSON.stringify(schema));
}
