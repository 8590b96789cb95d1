// The committed BrandCatalog CRD in a real Kubernetes API server: the server takes the CRD, runs its schema
// and CEL rules on what users apply (including what ajv cannot: list-map key uniqueness, CEL itself), fills
// defaults, prunes unknown fields, and serves the status subresource, printer columns and short name.
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  dumpYaml,
  setHeaderOptions,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from '#core/infra/repo-root.js';
import { brandCatalogSchema, GROUP, VERSION } from '../../operator/src/crd/generate.js';
import type { BrandCatalogStatus } from '../../operator/src/crd/status.js';
import { installBrandCatalogCrd } from '../../testkit/brandcatalog-crd.js';
import { KUBERNETES_START_TIMEOUT_MS, testKubernetes, type TestKubernetes } from '../../testkit/kubernetes.js';

const PLURAL = 'brandcatalogs';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
type Spec = { [key: string]: unknown };

describe('operator: the BrandCatalog CRD in a real API server', function () {
  let cluster: TestKubernetes;
  let objects: CustomObjectsApi;
  let namespace: string;
  let installed: V1CustomResourceDefinition;

  before(async function () {
    this.timeout(KUBERNETES_START_TIMEOUT_MS); // the first run builds kube-apiserver
    cluster = await testKubernetes();
    installed = await installBrandCatalogCrd(cluster.kubeconfig);
    namespace = `crd-${randomBytes(4).toString('hex')}`;
    await cluster.kubeconfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    objects = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  });

  const body = (name: string, spec: Spec) => ({
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'BrandCatalog',
    metadata: { name },
    spec,
  });
  const create = (name: string, spec: Spec, fieldValidation?: string) =>
    objects.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: PLURAL,
      body: body(name, spec),
      ...(fieldValidation && { fieldValidation }),
    });
  const read = async (name: string) =>
    (await objects.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name })) as {
      spec: Spec;
      status?: Spec;
    };
  /** The server's refusal: its HTTP status and message. */
  const refusal = (spec: Spec, fieldValidation?: string) =>
    create(`bad-${randomBytes(3).toString('hex')}`, spec, fieldValidation).then(
      () => expect.fail(`the server accepted ${JSON.stringify(spec).slice(0, 200)}`),
      (error: unknown) => {
        if (!(error instanceof ApiException)) throw error;
        return { code: error.code, message: String((JSON.parse(String(error.body)) as { message?: string }).message) };
      },
    );
  const source = (fields: Spec) => ({ name: 'a', format: 'csv', ...fields });

  it('stores the schema exactly as generated: nothing dropped on the way, nothing refused', () => {
    const stored = parseYaml(dumpYaml(installed)) as { spec: { versions: { schema: { openAPIV3Schema: unknown } }[] } };
    expect(stored.spec.versions[0]!.schema.openAPIV3Schema).to.deep.equal(brandCatalogSchema());
  });

  it('accepts the vendors example as written (adding only the default it leaves out)', async () => {
    const example = parseYaml(
      await readFile(path.join(repoRoot(), 'examples', 'brandcatalog-vendors.yaml'), 'utf8'),
    ) as { spec: Spec };
    await create('vendors', example.spec);
    expect((await read('vendors')).spec).to.deep.equal({ ...example.spec, suspend: false });
  });

  it('fills the defaults a minimal spec leaves out', async () => {
    await create('minimal', { sources: [source({ inline: 'name,fhirBaseUrl\n' })] });
    expect((await read('minimal')).spec).to.deep.equal({
      sources: [{ name: 'a', format: 'csv', inline: 'name,fhirBaseUrl\n', platformType: 'OTHER', priority: 100 }],
      logos: { sizes: [64, 128, 256, 512], faviconFallback: true },
      refreshInterval: '24h',
      suspend: false,
      rollout: { retainSnapshots: 5, minBrandRatioPercent: 50 },
    });
  });

  it('refuses two of url, configMapRef and inline, and none of them', async () => {
    const both = await refusal({ sources: [source({ url: 'https://example.org/b.csv', inline: 'x' })] });
    expect(both).to.include({ code: 422 });
    expect(both.message).to.include('exactly one of url, configMapRef and inline is required');
    expect((await refusal({ sources: [source({})] })).message).to.include(
      'exactly one of url, configMapRef and inline is required',
    );
  });

  it('refuses two sources with one name', async () => {
    const duplicate = await refusal({ sources: [source({ inline: 'x' }), source({ inline: 'y' })] });
    expect(duplicate).to.include({ code: 422 });
    expect(duplicate.message).to.match(/spec\.sources\[1\]: Duplicate value/);
  });

  it('refuses http: URLs, and the demo file: URLs that only the command line reads', async () => {
    const http = await refusal({ sources: [source({ url: 'http://example.org/b.csv' })] });
    expect(http).to.include({ code: 422 });
    expect(http.message).to.include('url must be an https:// URL');
    const demo = parseYaml(await readFile(path.join(repoRoot(), 'examples', 'demo', 'brandcatalog.yaml'), 'utf8')) as {
      spec: Spec;
    };
    expect((await refusal(demo.spec)).message).to.match(
      /spec\.sources\[0\]\.url: Invalid value: .*file: URLs are for `portico-operator import`/,
    );
  });

  it('refuses a spec without sources, and a refreshInterval under a minute', async () => {
    const missing = await refusal({ refreshInterval: '1h' });
    expect(missing).to.include({ code: 422 });
    expect(missing.message).to.include('spec.sources: Required value');
    expect((await refusal({ sources: [source({ inline: 'x' })], refreshInterval: '30s' })).message).to.include(
      'refreshInterval must be between 1m and 720h',
    );
  });

  it('fills the health-check defaults when healthChecks is given, and refuses an interval under 5 minutes', async () => {
    await create('checked', { sources: [source({ inline: 'x' })], healthChecks: {} });
    expect((await read('checked')).spec.healthChecks).to.deep.equal({
      enabled: true,
      interval: '6h',
      concurrency: 32,
      perHostRate: '2/s',
      perHostConcurrency: 2,
    });
    const fast = await refusal({ sources: [source({ inline: 'x' })], healthChecks: { interval: '1m' } });
    expect(fast).to.include({ code: 422 });
    expect(fast.message).to.include('healthChecks.interval must be between 5m and 168h');
    expect(
      (await refusal({ sources: [source({ inline: 'x' })], healthChecks: { perHostRate: '2/h' } })).message,
    ).to.include('spec.healthChecks.perHostRate');
  });

  it('drops unknown fields, and names them to clients that ask for strict validation (kubectl does)', async () => {
    const strict = await refusal({ sources: [source({ inline: 'x', colour: 'blue' })] }, 'Strict');
    expect(strict).to.include({ code: 400 });
    expect(strict.message).to.include('unknown field "spec.sources[0].colour"');
    await create('pruned', { sources: [source({ inline: 'x', colour: 'blue' })] }, 'Ignore');
    expect((await read('pruned')).spec.sources).to.deep.equal([
      { name: 'a', format: 'csv', inline: 'x', platformType: 'OTHER', priority: 100 },
    ]);
  });

  it('takes status through the status subresource and shows it in the printer columns', async () => {
    await create('published', {
      sources: [source({ inline: 'x' }), { name: 'b', format: 'csv', url: 'https://example.org/b.csv' }],
    });
    const at = new Date().toISOString();
    const status: BrandCatalogStatus = {
      observedGeneration: 1,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Published',
          message: '16 brands in snapshot s-1',
          lastTransitionTime: at,
          observedGeneration: 1,
        },
        {
          type: 'Stalled',
          status: 'False',
          reason: 'Published',
          message: 'no problem',
          lastTransitionTime: at,
          observedGeneration: 1,
        },
      ],
      brandCount: 16,
      duplicatesMerged: 1,
      sources: [
        { name: 'a', rowsRead: 17, rejected: 0, kept: 17 },
        { name: 'b', error: 'HTTP 503' },
      ],
      logos: { rendered: 15, fallback: 1, failed: 0 },
      currentSnapshot: { id: 's-1', brandCount: 16, publishedAt: at },
      lastSyncTime: at,
      endpointsUp: 12,
      endpointsDegraded: 1,
      endpointsDown: 2,
      endpointsUnknown: 1,
      lastHealthSweepAt: at,
    };
    const target = { group: GROUP, version: VERSION, namespace, plural: PLURAL, name: 'published' };
    await objects.patchNamespacedCustomObjectStatus({ ...target, body: { status } }, mergePatch);
    expect((await read('published')).status).to.deep.equal(status);

    const table = (await getJson(
      cluster,
      `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}/published`,
      'application/json;as=Table;v=v1;g=meta.k8s.io',
    )) as {
      columnDefinitions: { name: string }[];
      rows: { cells: unknown[] }[];
    };
    const columns = table.columnDefinitions.map((c) => c.name);
    expect(columns).to.deep.equal(['Name', 'Ready', 'Brands', 'Snapshot', 'Up', 'Down', 'Status', 'Age']);
    expect(table.rows[0]!.cells.slice(0, 7)).to.deep.equal([
      'published',
      'True',
      16,
      's-1',
      12,
      2,
      '16 brands in snapshot s-1',
    ]);

    const lowercase = { ...status, conditions: [{ ...status.conditions![0]!, reason: 'published ok' }] };
    const rejected = await objects
      .patchNamespacedCustomObjectStatus({ ...target, body: { status: lowercase } }, mergePatch)
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect((rejected as ApiException<string>).code).to.equal(422);
  });

  it('is discoverable by its short name and category', async () => {
    const resources = (await getJson(cluster, `/apis/${GROUP}/${VERSION}`)) as {
      resources: { name: string; shortNames?: string[]; categories?: string[]; namespaced: boolean }[];
    };
    expect(resources.resources.find((r) => r.name === PLURAL)).to.deep.include({
      shortNames: ['bcat'],
      categories: ['portico'],
      namespaced: true,
    });
  });
});

/** A GET the generated client has no call for (Table output, discovery), with the cluster's CA and token. */
function getJson(cluster: TestKubernetes, urlPath: string, accept = 'application/json'): Promise<unknown> {
  const ca = Buffer.from(cluster.kubeconfig.getCurrentCluster()!.caData!, 'base64');
  return new Promise((resolve, reject) => {
    const req = request(
      `${cluster.server}${urlPath}`,
      { ca, headers: { authorization: `Bearer ${cluster.token}`, accept } },
      (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          response.statusCode === 200
            ? resolve(JSON.parse(text))
            : reject(new Error(`GET ${urlPath}: ${response.statusCode} ${text}`)),
        );
      },
    );
    req.on('error', reject).end();
  });
}
