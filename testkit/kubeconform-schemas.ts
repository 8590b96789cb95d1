// JSON schemas for kubeconform, generated from a Kubernetes API server's own OpenAPI v3 document, so that
// manifests are checked against exactly the types (built-in and custom) that server serves: one file per kind,
// `{kind}{-group's first label}-{version}.json` as kubeconform's `{{ .ResourceKind }}{{ .KindSuffix }}.json`
// expects, each standalone (every schema it refers to under `definitions`) and strict (objects with declared
// properties admit no others, as the server's fieldValidation=Strict does). kubeconform reads them as
// draft-04; OpenAPI's `nullable` becomes a `null` type, and descriptions are dropped.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { until } from './until.js';

type Schema = { [key: string]: unknown };

export interface KindRef {
  apiVersion: string;
  kind: string;
}

/** What kubeconform calls the schema of a kind (pkg/registry: schemaPath). */
export function kubeconformFileName({ apiVersion, kind }: KindRef): string {
  const [groupOrVersion, version] = apiVersion.split('/') as [string, string | undefined];
  const suffix = `-${groupOrVersion.split('.')[0]!.toLowerCase()}${version === undefined ? '' : `-${version.toLowerCase()}`}`;
  return `${kind.toLowerCase()}${suffix}.json`;
}

const COMPONENTS = '#/components/schemas/';

/**
 * Writes the schema of each kind into `dir`, from the server's OpenAPI v3 documents (`getJson` reads a path of
 * the server, e.g. `/openapi/v3`). The server publishes a new CRD's document a moment after the CRD is
 * Established, so a kind it does not describe yet is looked up again until `timeoutMs` has passed.
 */
export async function writeKubeconformSchemas(
  getJson: (serverPath: string) => Promise<unknown>,
  kinds: readonly KindRef[],
  dir: string,
  timeoutMs = 30_000,
): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const unique = [...new Map(kinds.map((k) => [`${k.apiVersion} ${k.kind}`, k])).values()];
  let missing: string[] = [];
  const described = await until(
    "every kind in the API server's OpenAPI v3 documents",
    async () => {
      const index = (await getJson('/openapi/v3')) as { paths: Record<string, { serverRelativeURL: string }> };
      const documents = new Map<string, Promise<Record<string, Schema> | undefined>>();
      const documentOf = (apiVersion: string) => {
        const key = apiVersion.includes('/') ? `apis/${apiVersion}` : `api/${apiVersion}`;
        const entry = index.paths[key];
        if (!documents.has(key))
          documents.set(
            key,
            entry
              ? getJson(entry.serverRelativeURL).then(
                  (d) => (d as { components: { schemas: Record<string, Schema> } }).components.schemas,
                )
              : Promise.resolve(undefined),
          );
        return documents.get(key)!;
      };
      const found = await Promise.all(
        unique.map(async (ref) => ({
          ref,
          schemas: await documentOf(ref.apiVersion),
          name: schemaName(ref, await documentOf(ref.apiVersion)),
        })),
      );
      missing = found.filter((f) => f.name === undefined).map((f) => `${f.ref.apiVersion} ${f.ref.kind}`);
      return missing.length === 0 && found;
    },
    { timeoutMs, intervalMs: 250, diagnose: () => `not described: ${missing.join(', ')}` },
  );
  return Promise.all(
    described.map(async ({ ref, schemas, name }) => {
      const definitions: Record<string, Schema> = {};
      for (const reachable of reachableFrom(name!, schemas!))
        definitions[reachable] = toJsonSchema(schemas![reachable]!);
      const file = path.join(dir, kubeconformFileName(ref));
      await writeFile(file, JSON.stringify({ ...toJsonSchema(schemas![name!]!), definitions }));
      return file;
    }),
  );
}

/** The name of the component schema that describes the kind, if the document has one. */
function schemaName(ref: KindRef, schemas: Record<string, Schema> | undefined): string | undefined {
  if (!schemas) return undefined;
  const [group, version] = ref.apiVersion.includes('/') ? ref.apiVersion.split('/') : ['', ref.apiVersion];
  return Object.keys(schemas).find((candidate) =>
    (
      (schemas[candidate]!['x-kubernetes-group-version-kind'] as
        { group: string; version: string; kind: string }[] | undefined) ?? []
    ).some((gvk) => gvk.group === group && gvk.version === version && gvk.kind === ref.kind),
  );
}

/** The names of every schema `name` refers to, itself included. */
function reachableFrom(name: string, schemas: Record<string, Schema>): Set<string> {
  const seen = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === '$ref' && typeof value === 'string' && value.startsWith(COMPONENTS)) {
          const target = value.slice(COMPONENTS.length);
          if (!seen.has(target)) {
            seen.add(target);
            if (!schemas[target]) throw new Error(`dangling reference ${value}`);
            visit(schemas[target]);
          }
        } else visit(value);
      }
    }
  };
  seen.add(name);
  visit(schemas[name]);
  return seen;
}

/** One OpenAPI v3 schema as strict draft-04 JSON Schema. */
export function toJsonSchema(node: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'description' || key === 'default' || key === 'nullable' || key === 'example') continue;
    if (key === '$ref' && typeof value === 'string') out.$ref = `#/definitions/${value.slice(COMPONENTS.length)}`;
    else if (key === 'properties' || key === 'patternProperties') {
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, Schema>).map(([name, child]) => [name, toJsonSchema(child)]),
      );
    } else if (key === 'additionalProperties' || key === 'items' || key === 'not') {
      out[key] =
        typeof value === 'object' && value !== null && !Array.isArray(value) ? toJsonSchema(value as Schema) : value;
    } else if (key === 'allOf' || key === 'anyOf' || key === 'oneOf') {
      out[key] = (value as Schema[]).map(toJsonSchema);
    } else out[key] = value;
  }
  if (out.properties && !('additionalProperties' in out) && out['x-kubernetes-preserve-unknown-fields'] !== true)
    out.additionalProperties = false;
  if (node.nullable === true) {
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
    else if (out.type === undefined) return { anyOf: [{ type: 'null' }, out] };
  }
  return out;
}
