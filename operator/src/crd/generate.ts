// The BrandCatalog CustomResourceDefinition, built from the TypeBox schemas that also validate command-line
// files (catalog-spec.ts) and type the controller's status (status.ts), so the cluster and the command line
// cannot drift apart. What only the cluster enforces is listed once, in CLUSTER_RULES.
// `npm run crds` writes crds/brandcatalogs.catalog.portico.dev.yaml, then the Helm chart's template made from it
// (chart-template.ts); tests fail when either is stale.
import { writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TSchema } from '@sinclair/typebox';
import { Document } from 'yaml';
import { repoRoot } from '#core/infra/repo-root.js';
import { BrandCatalogSpec, CRD_NAME, GROUP, PLURAL, VERSION } from '../shared/catalog-spec.js';

export { CRD_NAME, GROUP, PLURAL, VERSION };
import { BrandCatalogStatus } from './status.js';
import { writeChartCrdTemplate } from './chart-template.js';

export const CRD_FILE = path.join('crds', `${CRD_NAME}.yaml`);

export type Schema = { [key: string]: unknown };

/** Keywords a structural schema may carry as TypeBox writes them. */
const KEPT = new Set([
  'type',
  'format',
  'title',
  'description',
  'default',
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
]);
/** An inline source must leave room in the object for the rest: etcd stores at most ~1.5 MiB per object. */
export const MAX_INLINE_BYTES = 1024 * 1024;

const celRule = (rule: string, message: string) => ({ rule, message });

/**
 * What the cluster enforces beyond the shared schema, by field path (`[]` = every item). CEL rules need
 * bounded strings and lists so the API server can estimate their cost; the bounds here are the ones the
 * shared schema leaves open.
 */
export const CLUSTER_RULES: Record<string, Schema> = {
  'spec.sources': { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] },
  'spec.sources[]': {
    'x-kubernetes-validations': [
      celRule(
        '(has(self.url) ? 1 : 0) + (has(self.configMapRef) ? 1 : 0) + (has(self.inline) ? 1 : 0) == 1',
        'exactly one of url, configMapRef and inline is required',
      ),
    ],
  },
  'spec.sources[].url': {
    'x-kubernetes-validations': [
      celRule(
        "self.startsWith('https://')",
        'url must be an https:// URL (file: URLs are for `portico-operator import` on the command line; in a cluster use configMapRef or inline)',
      ),
    ],
  },
  'spec.sources[].inline': { maxLength: MAX_INLINE_BYTES },
  'spec.refreshInterval': {
    maxLength: 32,
    'x-kubernetes-validations': [
      celRule(
        "duration(self) >= duration('1m') && duration(self) <= duration('720h')",
        'refreshInterval must be between 1m and 720h (30 days)',
      ),
    ],
  },
  'spec.healthChecks.interval': {
    maxLength: 32,
    'x-kubernetes-validations': [
      celRule(
        "duration(self) >= duration('5m') && duration(self) <= duration('168h')",
        'healthChecks.interval must be between 5m and 168h (7 days)',
      ),
    ],
  },
  'status.conditions': { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] },
  'status.sources': { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] },
};

/**
 * A TypeBox schema as a Kubernetes structural schema. Unions of literals become `enum`; any other union is
 * refused (not structural: model it as one object with optional fields and a CEL rule instead).
 * `additionalProperties: false` is dropped: the API server prunes unknown fields of a structural schema (and
 * kubectl's strict field validation reports them), whereas keeping it next to `properties` is forbidden.
 * A property with a default leaves `required`: the server fills it, so a user need not write it.
 */
export function toStructural(schema: TSchema | Schema, at = '$'): Schema {
  const node = schema as Schema;
  if (Array.isArray(node.anyOf)) return literalUnion(node, at);
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (KEPT.has(key)) out[key] = value;
    else if (key === 'const') out.enum = [value];
    else if (key === 'properties') {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, Schema>).map(([name, child]) => [
          name,
          toStructural(child, `${at}.${name}`),
        ]),
      );
    } else if (key === 'items') out.items = toStructural(value as Schema, `${at}[]`);
    else if (key === 'required') {
      const properties = node.properties as Record<string, Schema>;
      const required = (value as string[]).filter((name) => properties[name]?.default === undefined);
      if (required.length > 0) out.required = required;
    } else if (key === 'uniqueItems') {
      // Forbidden in CRDs (quadratic to check); a `set` list is unique and says so to server-side apply.
      if (value === true) out['x-kubernetes-list-type'] = 'set';
    } else if (key === 'exclusiveMinimum' || key === 'exclusiveMaximum') {
      // JSON Schema 2019 numbers; OpenAPI v3.0 wants the bound plus a boolean.
      out[key === 'exclusiveMinimum' ? 'minimum' : 'maximum'] = value;
      out[key] = true;
    } else if (key === 'additionalProperties' && value === false) continue;
    else if (key === '$id' || key === '$schema') continue;
    else throw new Error(`${at}: "${key}" has no structural-schema equivalent`);
  }
  if (out.type === undefined) throw new Error(`${at}: a structural schema needs a type`);
  const items = out.items as Schema | undefined;
  if (out['x-kubernetes-list-type'] === 'set' && out.maxItems === undefined && Array.isArray(items?.enum))
    out.maxItems = items.enum.length;
  return out;
}

function literalUnion(node: Schema, at: string): Schema {
  const members = node.anyOf as Schema[];
  const type = members[0]?.type;
  if (!members.every((m) => m.const !== undefined && m.type === type && typeof type === 'string')) {
    throw new Error(`${at}: only unions of literals of one type are structural; restructure this union`);
  }
  const values = members.map((m) => m.const);
  const { anyOf: _anyOf, ...rest } = node;
  // TypeBox types numeric literals as `number`; whole numbers say `integer` so clients see one.
  const integral = type === 'number' && values.every((v) => Number.isInteger(v));
  return toStructural({ ...rest, type: integral ? 'integer' : type, enum: values }, at);
}

/** Key order people expect when reading the file: what a field is, then its bounds, then its children. */
const KEY_ORDER = [
  'type',
  'format',
  'description',
  'default',
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'exclusiveMinimum',
  'maximum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'required',
  'properties',
  'items',
  'x-kubernetes-validations',
];

function canonical(node: Schema): Schema {
  const rank = (key: string) => (KEY_ORDER.includes(key) ? KEY_ORDER.indexOf(key) : KEY_ORDER.length);
  const entries = Object.entries(node).sort(([a], [b]) => rank(a) - rank(b));
  return Object.fromEntries(
    entries.map(([key, value]) => {
      if (key === 'items') return [key, canonical(value as Schema)];
      if (key !== 'properties') return [key, value];
      return [
        key,
        Object.fromEntries(
          Object.entries(value as Record<string, Schema>).map(([name, child]) => [name, canonical(child)]),
        ),
      ];
    }),
  );
}

/** The schema node at a CLUSTER_RULES path ("spec.sources[].url") under an object schema. */
export function nodeAt(root: Schema, fieldPath: string): Schema {
  let node = root;
  for (const part of fieldPath.split('.')) {
    const name = part.replace(/\[\]$/, '');
    const child = (node.properties as Record<string, Schema> | undefined)?.[name];
    if (!child) throw new Error(`${fieldPath}: no field "${name}" in the schema`);
    node = child;
    if (part.endsWith('[]')) {
      if (!node.items) throw new Error(`${fieldPath}: "${name}" is not a list`);
      node = node.items as Schema;
    }
  }
  return node;
}

/** The openAPIV3Schema of v1alpha1: the shared schemas, converted, plus CLUSTER_RULES. */
export function brandCatalogSchema(): Schema {
  const schema: Schema = {
    type: 'object',
    description:
      'A catalog of patient-facing health-system brands, built from public sources and served by the Portico API.',
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string', description: 'The versioned schema of this representation of an object.' },
      kind: { type: 'string', description: 'The REST resource this object represents.' },
      metadata: { type: 'object' },
      spec: toStructural(BrandCatalogSpec, 'spec'),
      status: toStructural(BrandCatalogStatus, 'status'),
    },
  };
  for (const [fieldPath, extra] of Object.entries(CLUSTER_RULES)) Object.assign(nodeAt(schema, fieldPath), extra);
  return canonical(schema);
}

const readyCondition = '.status.conditions[?(@.type=="Ready")]';

export function brandCatalogCrd(): Schema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: CRD_NAME,
      labels: { 'app.kubernetes.io/name': 'portico', 'app.kubernetes.io/component': 'catalog-operator' },
    },
    spec: {
      group: GROUP,
      names: {
        kind: 'BrandCatalog',
        listKind: 'BrandCatalogList',
        plural: PLURAL,
        singular: 'brandcatalog',
        shortNames: ['bcat'],
        categories: ['portico'],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Ready', type: 'string', jsonPath: `${readyCondition}.status` },
            { name: 'Brands', type: 'integer', jsonPath: '.status.brandCount' },
            { name: 'Snapshot', type: 'string', jsonPath: '.status.currentSnapshot.id' },
            { name: 'Up', type: 'integer', jsonPath: '.status.endpointsUp', priority: 1 },
            { name: 'Down', type: 'integer', jsonPath: '.status.endpointsDown', priority: 1 },
            { name: 'Status', type: 'string', jsonPath: `${readyCondition}.message`, priority: 1 },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: { openAPIV3Schema: brandCatalogSchema() },
        },
      ],
    },
  };
}

/** The CRD file's text, exactly as committed. */
export function brandCatalogCrdYaml(): string {
  const document = new Document(brandCatalogCrd());
  document.commentBefore = ` Generated by \`npm run crds\` (operator/src/crd/generate.ts) from the TypeBox schemas: do not edit.`;
  return document.toString({ lineWidth: 0 });
}

export async function writeCrdFile(root = repoRoot()): Promise<string> {
  const file = path.join(root, CRD_FILE);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, brandCatalogCrdYaml());
  return file;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(`wrote ${path.relative(process.cwd(), await writeCrdFile())}`);
  console.log(`wrote ${path.relative(process.cwd(), await writeChartCrdTemplate(repoRoot(), CRD_FILE))}`); // the chart's copy, from that file
}
