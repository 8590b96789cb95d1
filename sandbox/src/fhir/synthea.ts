// Synthea's patient bundles (test/fixtures/synthea, scripts/synthea-fixtures.sh) as a FHIR server holds them: a
// transaction Bundle names its own resources by `urn:uuid:` full URLs, which a server resolves to `Type/id` when it
// stores them; here each reference to one is rewritten so, and each resource keeps its id.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';

type Resource = Record<string, unknown> & { resourceType: string; id: string };

export const SYNTHEA_FIXTURES = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../../test/fixtures/synthea',
);

/** The fixture files' names (each one patient), in name order. */
export function syntheaFiles(folder = SYNTHEA_FIXTURES): string[] {
  return readdirSync(folder)
    .filter((name) => name.endsWith('.json.gz'))
    .sort();
}

/** One patient's resources, with the bundle's `urn:uuid:` references resolved to `Type/id`. */
export function syntheaPatient(file: string, folder = SYNTHEA_FIXTURES): Resource[] {
  const bundle = JSON.parse(gunzipSync(readFileSync(path.join(folder, file))).toString('utf8')) as {
    entry: { fullUrl: string; resource: Resource }[];
  };
  const literal = new Map(bundle.entry.map((e) => [e.fullUrl, `${e.resource.resourceType}/${e.resource.id}`]));
  return bundle.entry.map((e) => withReferences(e.resource, literal));
}

/** A copy of `resource` with each `reference` that `to` names replaced by what it maps to (the others as they are). */
export function withReferences<T>(resource: T, to: ReadonlyMap<string, string>): T {
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(
      Object.entries(value).map(([name, v]) => [
        name,
        name === 'reference' && typeof v === 'string' ? (to.get(v) ?? v) : rewrite(v),
      ]),
    );
  };
  return rewrite(resource) as T;
}
