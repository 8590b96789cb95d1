// The BrandCatalog CRD generated from the TypeBox schemas: the committed file is current, the schema is one
// the API server accepts (structural, bounded), and the examples are judged as the cluster would judge them.
// The API server itself runs these rules in crd-apiserver.test.ts.
import { expect } from 'chai';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from '#core/infra/repo-root.js';
import {
  brandCatalogCrd,
  brandCatalogCrdYaml,
  brandCatalogSchema,
  CRD_FILE,
  MAX_INLINE_BYTES,
  toStructural,
} from '../../operator/src/crd/generate.js';
import { loadCatalogFile } from '../../operator/src/shared/catalog-spec.js';
import { celViolations, defaultsOf, structuralProblems, unboundedFields } from '../../testkit/crd-schema.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
type Schema = { [key: string]: unknown };

function openApiAjv(): Ajv {
  const ajv = addFormats(new Ajv({ allErrors: true, strict: true, useDefaults: true }));
  ajv.addVocabulary(['x-kubernetes-validations', 'x-kubernetes-list-type', 'x-kubernetes-list-map-keys']);
  return ajv;
}

/** What the API server would say about the object, short of what only it can check (list-map uniqueness). */
function judge(object: unknown): string[] {
  const schema = brandCatalogSchema();
  const validate = openApiAjv().compile(schema);
  const copy = structuredClone(object);
  if (!validate(copy)) return (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
  return celViolations(schema, copy);
}

const catalog = (spec: Schema) => ({
  apiVersion: 'catalog.portico.dev/v1alpha1',
  kind: 'BrandCatalog',
  metadata: { name: 'c' },
  spec,
});
const source = (fields: Schema) => ({ name: 'a', format: 'csv', ...fields });

async function exampleCatalogs(): Promise<string[]> {
  const root = path.join(repoRoot(), 'examples');
  const files = (await readdir(root, { recursive: true }))
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => path.join(root, f));
  const texts = await Promise.all(files.map((f) => readFile(f, 'utf8')));
  return files.filter((_, i) => /^kind:\s*BrandCatalog\s*$/m.test(texts[i]!));
}

describe('operator: the BrandCatalog CRD', () => {
  it('is committed exactly as generated (run `npm run crds` after changing a schema)', async () => {
    const committed = await readFile(path.join(repoRoot(), CRD_FILE), 'utf8');
    expect(committed).to.equal(brandCatalogCrdYaml());
    expect(parseYaml(committed)).to.deep.equal(brandCatalogCrd());
  });

  it('names the resource as docs/operator.md does, with status, printer columns and a short name', () => {
    const { spec } = brandCatalogCrd() as { spec: Schema & { versions: Schema[] } };
    expect(spec).to.deep.include({ group: 'catalog.portico.dev', scope: 'Namespaced' });
    expect(spec.names).to.deep.include({
      kind: 'BrandCatalog',
      plural: 'brandcatalogs',
      singular: 'brandcatalog',
      shortNames: ['bcat'],
    });
    const [version] = spec.versions;
    expect(version).to.deep.include({ name: 'v1alpha1', served: true, storage: true, subresources: { status: {} } });
    const columns = (version!.additionalPrinterColumns as Schema[]).map((c) => [c.name, c.jsonPath]);
    expect(columns).to.deep.include.members([
      ['Ready', '.status.conditions[?(@.type=="Ready")].status'],
      ['Brands', '.status.brandCount'],
      ['Snapshot', '.status.currentSnapshot.id'],
      ['Age', '.metadata.creationTimestamp'],
    ]);
  });

  it('has a structural schema, every string and list bounded', () => {
    const schema = brandCatalogSchema();
    expect(structuralProblems(schema)).to.deep.equal([]);
    expect(unboundedFields(schema)).to.deep.equal(['$.apiVersion', '$.kind']);
    expect(openApiAjv().validateSchema(schema), JSON.stringify(openApiAjv().errors)).to.equal(true);
  });

  it('the structural checker finds what the API server refuses', () => {
    const bad = {
      type: 'object',
      properties: {
        metadata: { type: 'object', properties: { name: { type: 'string' } } },
        either: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
        tags: { type: 'array', uniqueItems: true, items: { type: 'string' } },
        closed: { type: 'object', additionalProperties: false, properties: {} },
        list: {
          type: 'array',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['id'],
          items: { type: 'object', properties: { id: { type: 'string' } } },
        },
      },
    };
    expect(structuralProblems(bad)).to.have.members([
      '$.metadata: metadata may not be constrained here',
      '$.either: "anyOf" is not allowed in a CRD schema',
      '$.either: no type',
      '$.tags: "uniqueItems" is not allowed in a CRD schema',
      '$.tags: uniqueItems is forbidden',
      '$.closed: additionalProperties is forbidden with properties or as false',
      '$.list: map key "id" must be a required scalar',
    ]);
  });

  it('has defaults the server can apply: each valid for its own field and its rules', () => {
    const found = defaultsOf(brandCatalogSchema());
    expect(found.map(([at]) => at)).to.include.members([
      '$.spec.refreshInterval',
      '$.spec.logos',
      '$.spec.sources[].priority',
    ]);
    for (const [at, { default: value, ...node }] of found) {
      const validate = openApiAjv().compile(node);
      expect(validate(structuredClone(value)), `${at}: ${JSON.stringify(validate.errors)}`).to.equal(true);
      expect(celViolations(node, value, at)).to.deep.equal([]);
    }
  });

  it('converts TypeBox: literal unions to enums, optional and defaulted fields not required, other unions refused', () => {
    const converted = toStructural(
      Type.Object(
        {
          size: Type.Union([Type.Literal(64), Type.Literal(128)]),
          note: Type.Optional(Type.String()),
          on: Type.Boolean({ default: true }),
          id: Type.String(),
        },
        { additionalProperties: false, $id: 'X' },
      ),
    );
    expect(converted).to.deep.equal({
      type: 'object',
      properties: {
        size: { type: 'integer', enum: [64, 128] },
        note: { type: 'string' },
        on: { type: 'boolean', default: true },
        id: { type: 'string' },
      },
      required: ['size', 'id'],
    });
    expect(() => toStructural(Type.Object({ either: Type.Union([Type.String(), Type.Integer()]) }))).to.throw(
      /either: only unions of literals/,
    );
    expect(() => toStructural(Type.Object({ any: Type.Any() }))).to.throw(/any: a structural schema needs a type/);
  });

  it('accepts every example but the command-line ones, whose file: URLs the cluster refuses', async () => {
    const files = (await exampleCatalogs()).map((f) => path.relative(repoRoot(), f));
    const commandLine = ['examples/demo/brandcatalog.yaml', 'examples/brandcatalog-offline.yaml'];
    expect(files).to.include.members(['examples/brandcatalog-vendors.yaml', ...commandLine]);
    for (const file of files) {
      const document = parseYaml(await readFile(path.join(repoRoot(), file), 'utf8')) as { spec: { sources: [] } };
      const verdict = judge(document);
      await loadCatalogFile(path.join(repoRoot(), file)); // the command line takes every one of them
      if (commandLine.includes(file)) {
        expect(verdict, file).to.have.length(document.spec.sources.length);
        expect(verdict[0]).to.match(
          /^\$\.spec\.sources\[0\]\.url: url must be an https:\/\/ URL \(file: URLs are for `portico-operator import`/,
        );
      } else {
        expect(verdict, file).to.deep.equal([]);
      }
    }
  });

  it('requires exactly one of url, configMapRef and inline per source', () => {
    const url = 'https://example.org/brands.csv';
    expect(judge(catalog({ sources: [source({ url })] }))).to.deep.equal([]);
    expect(
      judge(catalog({ sources: [source({ configMapRef: { name: 'brands', key: 'brands.csv' } })] })),
    ).to.deep.equal([]);
    expect(judge(catalog({ sources: [source({ inline: 'name,fhirBaseUrl\n' })] }))).to.deep.equal([]);
    const one = ['$.spec.sources[0]: exactly one of url, configMapRef and inline is required'];
    expect(judge(catalog({ sources: [source({ url, inline: 'name,fhirBaseUrl\n' })] }))).to.deep.equal(one);
    expect(judge(catalog({ sources: [source({})] }))).to.deep.equal(one);
  });

  it('refuses http: URLs, missing or empty sources, unknown formats and oversized inline documents', () => {
    expect(judge(catalog({ sources: [source({ url: 'http://example.org/b.csv' })] }))).to.deep.equal([
      '$.spec.sources[0].url: url must be an https:// URL (file: URLs are for `portico-operator import` on the command line; in a cluster use configMapRef or inline)',
    ]);
    expect(judge(catalog({}))).to.deep.equal(["/spec must have required property 'sources'"]);
    expect(judge(catalog({ sources: [] }))).to.deep.equal(['/spec/sources must NOT have fewer than 1 items']);
    expect(judge(catalog({ sources: [source({ format: 'xml', inline: 'x' })] }))).to.deep.equal([
      '/spec/sources/0/format must be equal to one of the allowed values',
    ]);
    expect(judge(catalog({ sources: [source({ inline: 'x'.repeat(MAX_INLINE_BYTES + 1) })] }))).to.deep.equal([
      '/spec/sources/0/inline must NOT have more than 1048576 characters',
    ]);
  });

  it('keeps refreshInterval between a minute and 30 days', () => {
    const spec = (refreshInterval: string) => catalog({ sources: [source({ inline: 'x' })], refreshInterval });
    for (const ok of ['1m', '90s', '1h30m', '24h', '720h']) expect(judge(spec(ok)), ok).to.deep.equal([]);
    for (const tooShortOrLong of ['30s', '59s', '721h', '720h1s']) {
      expect(judge(spec(tooShortOrLong)), tooShortOrLong).to.deep.equal([
        '$.spec.refreshInterval: refreshInterval must be between 1m and 720h (30 days)',
      ]);
    }
  });

  it('keeps healthChecks.interval between 5 minutes and a week, and perHostRate a count per second or minute', () => {
    const spec = (healthChecks: Schema) => catalog({ sources: [source({ inline: 'x' })], healthChecks });
    for (const interval of ['5m', '6h', '1h30m', '168h']) expect(judge(spec({ interval })), interval).to.deep.equal([]);
    for (const interval of ['4m59s', '30s', '169h'])
      expect(judge(spec({ interval })), interval).to.deep.equal([
        '$.spec.healthChecks.interval: healthChecks.interval must be between 5m and 168h (7 days)',
      ]);
    for (const perHostRate of ['2/s', '30/m', '1/5s', '9999/s'])
      expect(judge(spec({ perHostRate })), perHostRate).to.deep.equal([]);
    for (const perHostRate of ['0/s', '2', '2/0s', '2/h', '1.5/s', '2/ s'])
      expect(judge(spec({ perHostRate })), perHostRate).to.have.length(1);
    expect(judge(spec({ concurrency: 0 }))).to.deep.equal(['/spec/healthChecks/concurrency must be >= 1']);
    expect(judge(spec({ perHostConcurrency: 17 }))).to.deep.equal([
      '/spec/healthChecks/perHostConcurrency must be <= 16',
    ]);
  });

  it('leaves healthChecks out when absent (no checks), and fills its defaults when present', () => {
    const validate = openApiAjv().compile(brandCatalogSchema());
    const absent = catalog({ sources: [source({ inline: 'x' })] });
    expect(validate(absent)).to.equal(true);
    expect(absent.spec).to.not.have.property('healthChecks');
    const empty = catalog({ sources: [source({ inline: 'x' })], healthChecks: {} });
    expect(validate(empty)).to.equal(true);
    expect(empty.spec.healthChecks).to.deep.equal({
      enabled: true,
      interval: '6h',
      concurrency: 32,
      perHostRate: '2/s',
      perHostConcurrency: 2,
    });
  });

  it('fills the defaults a minimal spec leaves out, as the API server will', () => {
    const minimal = catalog({ sources: [source({ inline: 'x' })] });
    const validate = openApiAjv().compile(brandCatalogSchema());
    expect(validate(minimal)).to.equal(true);
    expect(minimal.spec).to.deep.equal({
      sources: [{ name: 'a', format: 'csv', inline: 'x', platformType: 'OTHER', priority: 100 }],
      logos: { sizes: [64, 128, 256, 512], faviconFallback: true },
      refreshInterval: '24h',
      suspend: false,
      rollout: { retainSnapshots: 5, minBrandRatioPercent: 50 },
    });
  });

  it('makes source names list-map keys and status lists maps, so names are unique and merges are per item', () => {
    const schema = brandCatalogSchema() as { properties: Record<string, { properties: Record<string, Schema> }> };
    expect(schema.properties.spec!.properties.sources)
      .to.include({ 'x-kubernetes-list-type': 'map' })
      .and.deep.include({ 'x-kubernetes-list-map-keys': ['name'] });
    expect(schema.properties.status!.properties.sources).to.deep.include({ 'x-kubernetes-list-map-keys': ['name'] });
    expect(schema.properties.status!.properties.conditions).to.deep.include({ 'x-kubernetes-list-map-keys': ['type'] });
  });
});
