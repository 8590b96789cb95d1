// The operator against a real Kubernetes API server (etcd + kube-apiserver, started by the test run):
// apply → Ready with counts and a snapshot the API serves; a spec change → a new snapshot; two instances →
// one leader reconciles; an expired watch (410) is recovered; delete → the finalizer cleans up.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import nock from 'nock';
import { pino } from 'pino';
import { systemClock } from '../../core/src/clock.js';
import { repoRoot } from '../../core/src/infra/repo-root.js';
import { CatalogController } from '../../operator/src/controller/controller.js';
import { CatalogInformer } from '../../operator/src/controller/informer.js';
import { FINALIZER, GROUP, KubeClient, PLURAL, VERSION, type BrandCatalogObject } from '../../operator/src/controller/kube.js';
import { LeaderElector } from '../../operator/src/controller/leader.js';
import { TestApi } from '../support/api.js';
import { BRAND_DATA } from '../support/brand-data.js';
import { installBrandCatalogCrd } from '../support/brandcatalog-crd.js';
import { KUBERNETES_START_TIMEOUT_MS, testKubernetes } from '../support/kubernetes.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const VENDOR = 'https://endpoints.vendor.example';

let last: unknown;
async function until<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    last = value;
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `; last seen: ${JSON.stringify(last).slice(0, 2000)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('operator: controller against a real Kubernetes API server', function () {
  this.timeout(120_000);
  let kubeconfig: KubeConfig;
  let api: TestApi;
  let namespace: string;
  let custom: CustomObjectsApi;
  const running: { elector: LeaderElector; controller: CatalogController }[] = [];

  before(async function () {
    this.timeout(KUBERNETES_START_TIMEOUT_MS); // the first run on a machine builds kube-apiserver
    ({ kubeconfig } = await testKubernetes());
    await installBrandCatalogCrd(kubeconfig); // through loadYaml: a plain parse would lose defaults and x-kubernetes-* rules
    namespace = `t-${randomUUID().slice(0, 8)}`;
    await kubeconfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    custom = kubeconfig.makeApiClient(CustomObjectsApi);
    api = await TestApi.start({ env: { PORTICO_CATALOG: `${namespace}/brands` } });
    nock(VENDOR).persist().get('/epic-r4.json').reply(200, readFileSync(path.join(BRAND_DATA, 'epic-legacy-2022/epic_endpoints_r4.json')));
  });

  after(async () => {
    for (const { elector, controller } of running) {
      await elector.stop();
      await controller.stop();
    }
    nock.cleanAll();
    await api?.close();
  });

  function startOperator(identity: string) {
    const kube = new KubeClient(kubeconfig);
    const controller = new CatalogController(
      // Plain fetch, which nock intercepts; the SSRF-filtering agent resolves names before nock could.
      { kube, store: api.services.snapshots, storage: api.services.storage, clock: systemClock, logger, fetchText: async (url) => {
          const response = await fetch(url);
          if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
          return response.text();
        },
      },
      { informer: { relistMs: 60_000, watchdogMs: 60_000 }, queue: { baseDelayMs: 200, maxDelayMs: 2000 }, workers: 2 },
      logger,
    );
    const elector = new LeaderElector(kube, { namespace, name: 'portico-catalog-operator', identity, leaseDurationSeconds: 3, retryMs: 300, renewDeadlineMs: 2000 }, logger, {
      onStartedLeading: () => void controller.start(),
      onStoppedLeading: () => void controller.stop(),
    });
    elector.start();
    const instance = { elector, controller };
    running.push(instance);
    return instance;
  }

  const catalogBody = (name: string, sources: unknown[]) => ({
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'BrandCatalog',
    metadata: { name, namespace },
    spec: { sources, refreshInterval: '1h', rollout: { minBrandRatioPercent: 0 } },
  });
  const read = async (name: string) => (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, name })) as BrandCatalogObject;
  const ready = (name: string, snapshotOtherThan?: string) =>
    until(`${name} to be Ready`, async () => {
      const object = await read(name);
      const status = object.status as { conditions?: { type: string; status: string }[]; currentSnapshot?: { id: string } } | undefined;
      const isReady = status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && status.currentSnapshot?.id !== snapshotOtherThan;
      last = object;
      return isReady ? object : undefined;
    });

  it('publishes an applied catalog (https, ConfigMap and inline sources): Ready, counts, snapshot, and the API serves it', async () => {
    const a = startOperator('operator-a');
    const b = startOperator('operator-b');
    await kubeconfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'hl7-example' }, data: { 'bundle.json': readFileSync(path.join(BRAND_DATA, 'smart-app-launch-examples/Bundle-example1.json'), 'utf8') } },
    });
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace,
      body: catalogBody('brands', [
        { name: 'epic', format: 'fhir-endpoint-bundle', url: `${VENDOR}/epic-r4.json`, platformType: 'EPIC', priority: 20 },
        { name: 'hl7', format: 'smart-brands-bundle', configMapRef: { name: 'hl7-example', key: 'bundle.json' }, priority: 10 },
        { name: 'local', format: 'csv', inline: 'name,fhirBaseUrl,state\nPortico Test Clinic,https://fhir.portico-test.example/r4,MA\n' },
      ]),
    });
    const object = await ready('brands');
    const status = object.status as Record<string, any>;
    expect(object.metadata.finalizers).to.include(FINALIZER);
    expect(status.observedGeneration).to.equal(object.metadata.generation);
    expect(status.brandCount).to.equal(304 + 1 + 1);
    expect(status.duplicatesMerged).to.equal(12);
    expect(status.logos.rendered).to.be.greaterThan(0);
    expect(status.currentSnapshot.brandCount).to.equal(304 + 1 + 1);
    expect(status.sources.map((s: { name: string }) => s.name)).to.deep.equal(['epic', 'hl7', 'local']);

    await until('the API to serve the new catalog', async () => (await api.request('GET', '/api/sdk/v1/catalog/brands?q=portico%20test')).body.count === 1);
    // One leader: only one instance reconciled.
    expect([a.controller.reconciles > 0, b.controller.reconciles > 0].filter(Boolean)).to.have.length(1);
    expect([a.elector.isLeader, b.elector.isLeader].filter(Boolean)).to.have.length(1);
  });

  it('publishes a new snapshot when the spec changes, and records an Event', async () => {
    const before = (await read('brands')).status as { currentSnapshot: { id: string } };
    await custom.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, plural: PLURAL, namespace, name: 'brands', body: [{ op: 'replace', path: '/spec/sources/2/inline', value: 'name,fhirBaseUrl\nPortico Second Clinic,https://fhir.portico-second.example/r4\n' }] },
    );
    const after = await ready('brands', before.currentSnapshot.id);
    expect((after.status as { currentSnapshot: { id: string } }).currentSnapshot.id).to.not.equal(before.currentSnapshot.id);
    // The Event is written right after the status: wait for it rather than race it.
    await until('a second Published event', async () => {
      const events = await kubeconfig.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace });
      return events.items.filter((e) => e.involvedObject.name === 'brands' && e.reason === 'Published').length >= 2;
    });
  });

  it('hands over to the other instance when the leader stops', async () => {
    const leader = running.find((r) => r.elector.isLeader)!;
    const follower = running.find((r) => r !== leader)!;
    await leader.elector.stop();
    await until('the other instance to lead', async () => follower.elector.isLeader && follower.controller.running);
    expect(leader.controller.running).to.equal(false); // the old leader's controller stopped with its lease
  });

  it('recovers from an expired watch (410 Gone) by relisting, and keeps seeing changes', async () => {
    const seen: string[] = [];
    const informer = new CatalogInformer(new KubeClient(kubeconfig), { onChange: (c) => seen.push(c.metadata.name), onDelete: () => {} }, { relistMs: 60_000, watchdogMs: 60_000 }, logger);
    await informer.start();
    try {
      const lists = informer.stats.lists;
      await informer.resumeFrom('1'); // long compacted away
      await until('the watch to expire and the informer to relist', async () => informer.stats.expired > 0 && informer.stats.lists > lists);
      await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, body: catalogBody('after-expiry', [{ name: 'one', format: 'csv', inline: 'name,fhirBaseUrl\nX,https://fhir.x.example/r4\n' }]) });
      await until('the new object through the resumed watch', async () => seen.includes('after-expiry'));
    } finally {
      informer.stop();
    }
  });

  it('reports a failing source: Ready=False/ReconcileFailed, the source\'s error, a Warning Event, and retries', async () => {
    let calls = 0;
    nock(VENDOR).persist().get('/flaky.json').reply(() => {
      calls++;
      return [503, 'x'.repeat(100_000)];
    });
    await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, body: catalogBody('flaky', [{ name: 'vendor', format: 'csv', url: `${VENDOR}/flaky.json` }]) });
    const failed = await until('ReconcileFailed', async () => {
      const object = await read('flaky');
      const conditions = (object.status as { conditions?: { type: string; status: string; reason: string; message: string }[] } | undefined)?.conditions ?? [];
      return conditions.find((c) => c.type === 'Ready' && c.status === 'False' && c.reason === 'ReconcileFailed') ? object : undefined;
    });
    const status = failed.status as { sources: { name: string; error?: string }[]; conditions: { message: string }[] };
    expect(status.sources[0]).to.include({ name: 'vendor' });
    expect(status.sources[0]!.error).to.match(/503/);
    expect(Math.max(...status.conditions.map((c) => c.message.length))).to.be.at.most(1024);
    await until('a ReconcileFailed event', async () => (await kubeconfig.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace })).items.some((e) => e.involvedObject.name === 'flaky' && e.reason === 'ReconcileFailed' && e.type === 'Warning'));
    await until('a retry with backoff', async () => calls >= 2);
    await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, name: 'flaky' });
  });

  it('holds back a snapshot whose brand count collapses: Stalled/BrandCountDrop, the previous one stays active', async () => {
    const csv = (n: number) => `name,fhirBaseUrl\n${Array.from({ length: n }, (_, i) => `Guarded Clinic ${i},https://fhir.guarded-${i}.example/r4`).join('\n')}\n`;
    const body = catalogBody('guarded', [{ name: 'list', format: 'csv', inline: csv(4) }]);
    body.spec.rollout.minBrandRatioPercent = 50;
    await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, body });
    const first = (await ready('guarded')).status as { currentSnapshot: { id: string } };
    await custom.patchNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, name: 'guarded', body: [{ op: 'replace', path: '/spec/sources/0/inline', value: csv(1) }] });
    const stalled = await until('Stalled/BrandCountDrop', async () => {
      const object = await read('guarded');
      const conditions = (object.status as { conditions?: { type: string; status: string; reason: string }[] }).conditions ?? [];
      return conditions.some((c) => c.type === 'Stalled' && c.status === 'True' && c.reason === 'BrandCountDrop') ? object : undefined;
    });
    const status = stalled.status as { conditions: { type: string; status: string }[]; currentSnapshot: { id: string } };
    expect(status.conditions.find((c) => c.type === 'Ready')!.status).to.equal('False');
    expect(status.currentSnapshot.id).to.equal(first.currentSnapshot.id);
    expect((await api.services.snapshots.active({ namespace, name: 'guarded' }))!.snapshotId).to.equal(first.currentSnapshot.id);
  });

  it('does nothing for a suspended catalog but say so', async () => {
    const body = { ...catalogBody('paused', [{ name: 'list', format: 'csv', inline: 'name,fhirBaseUrl\nPaused,https://fhir.paused.example/r4\n' }]) };
    (body.spec as Record<string, unknown>).suspend = true;
    await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, body });
    const object = await until('the Suspended condition', async () => {
      const current = await read('paused');
      const conditions = (current.status as { conditions?: { type: string; reason: string }[] } | undefined)?.conditions ?? [];
      return conditions.some((c) => c.type === 'Reconciling' && c.reason === 'Suspended') ? current : undefined;
    });
    expect((object.status as { currentSnapshot?: unknown }).currentSnapshot).to.equal(undefined);
    expect(await api.services.snapshots.active({ namespace, name: 'paused' })).to.equal(null);
  });

  it('deletes the catalog through its finalizer: snapshots and artwork go too', async () => {
    const status = (await read('brands')).status as { currentSnapshot: { id: string } };
    const snapshot = await api.services.snapshots.load(status.currentSnapshot.id);
    const logoKey = snapshot!.brands.find((b) => b.logo)!.logo!.assets['128'];
    expect(await api.services.storage.exists(logoKey)).to.equal(true);
    await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, name: 'brands' });
    await until('the object to be gone', async () => read('brands').then(() => false, (error: { code?: number }) => error.code === 404));
    expect(await api.services.snapshots.active({ namespace, name: 'brands' })).to.equal(null);
    expect(await api.services.snapshots.list({ namespace, name: 'brands' })).to.deep.equal([]);
    expect(await api.services.storage.exists(logoKey)).to.equal(false);
  });
});
