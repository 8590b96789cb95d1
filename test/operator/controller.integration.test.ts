// The operator against a real Kubernetes API server (etcd + kube-apiserver, started by the test run):
// apply → Ready with counts and a snapshot the API serves; a spec change → a new snapshot; two instances →
// one leader reconciles; a lost lease stops an instance as it stops the process in production; an expired
// watch (410) is recovered; delete → the finalizer cleans up. Every test starts its own operator instances
// (stopped after it) and creates the catalogs it needs.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import nock from 'nock';
import { pino } from 'pino';
import { systemClock } from '#core/clock.js';
import { CatalogInformer } from '../../operator/src/controller/informer.js';
import {
  FINALIZER,
  GROUP,
  KubeClient,
  microTime,
  PLURAL,
  VERSION,
  type BrandCatalogObject,
} from '../../operator/src/shared/kube.js';
import { OperatorMetrics } from '../../operator/src/shared/metrics.js';
import { startOperator as startInstance, type OperatorInstance } from '../../operator/src/controller/operator.js';
import { TestApi } from '../../testkit/api.js';
import { brandFile } from '../../testkit/brand-data.js';
import { installBrandCatalogCrd } from '../../testkit/brandcatalog-crd.js';
import { KUBERNETES_START_TIMEOUT_MS, testKubernetes } from '../../testkit/kubernetes.js';
import { until } from '../../testkit/until.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const VENDOR = 'https://endpoints.vendor.example';

describe('operator: controller against a real Kubernetes API server', function () {
  this.timeout(120_000);
  let kubeconfig: KubeConfig;
  let api: TestApi;
  let namespace: string;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let running: (OperatorInstance & { exitCode?: number })[] = [];

  before(async function () {
    this.timeout(KUBERNETES_START_TIMEOUT_MS); // the first run on a machine builds kube-apiserver
    ({ kubeconfig } = await testKubernetes());
    await installBrandCatalogCrd(kubeconfig); // through loadYaml: a plain parse would lose defaults and x-kubernetes-* rules
    namespace = `t-${randomUUID().slice(0, 8)}`;
    core = kubeconfig.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    custom = kubeconfig.makeApiClient(CustomObjectsApi);
    api = await TestApi.start({ env: { PORTICO_CATALOG: `${namespace}/brands` } });
    nock(VENDOR).persist().get('/epic-r4.json').reply(200, brandFile('epic-legacy-2022/epic_endpoints_r4.json'));
  });

  afterEach(async () => {
    // No instance outlives its test: the next one starts from a clean lease.
    for (const instance of running) await instance.stop();
    running = [];
  });

  after(async () => {
    nock.cleanAll();
    await api?.close();
  });

  /** An operator instance as main.ts runs one, except that losing the lease stops it instead of the process. */
  function startOperator(
    identity: string,
    options: { kube?: KubeClient; metrics?: OperatorMetrics; logger?: typeof logger } = {},
  ) {
    const instance: OperatorInstance & { exitCode?: number } = startInstance({
      kube: options.kube ?? new KubeClient(kubeconfig),
      // Plain fetch, which nock intercepts; the SSRF-filtering agent resolves names before nock could.
      deps: {
        store: api.services.snapshots,
        storage: api.services.storage,
        clock: systemClock,
        logger: options.logger ?? logger,
        metrics: options.metrics ?? new OperatorMetrics(),
        fetchText: async (url) => {
          const response = await fetch(url);
          if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
          return response.text();
        },
      },
      controller: {
        informer: { relistMs: 60_000, watchdogMs: 60_000 },
        queue: { baseDelayMs: 200, maxDelayMs: 2000 },
        workers: 2,
      },
      lease: {
        namespace,
        name: 'portico-catalog-operator',
        identity,
        // Long enough that a busy machine does not lose a renewal (the tests that hand over release the lease or
        // replace it; none waits for one to run out), so "one leader" holds however slow the machine is.
        leaseDurationSeconds: 20,
        retryMs: 300,
        renewDeadlineMs: 15_000,
      },
      logger,
      onLostLeadership: (code) => {
        instance.exitCode = code;
        void instance.stop();
      },
    });
    running.push(instance);
    return instance;
  }

  const catalogBody = (name: string, sources: unknown[]) => ({
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'BrandCatalog',
    metadata: { name, namespace },
    spec: { sources, refreshInterval: '1h', rollout: { minBrandRatioPercent: 0 } },
  });
  const create = (body: object) =>
    custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, body });
  const read = async (name: string) =>
    (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace,
      name,
    })) as BrandCatalogObject;
  const unique = (prefix: string) => `${prefix}-${randomUUID().slice(0, 6)}`;
  const ready = (name: string, snapshotOtherThan?: string) => {
    let last: unknown;
    return until(
      `${name} to be Ready`,
      async () => {
        const object = await read(name);
        const status = object.status as
          { conditions?: { type: string; status: string }[]; currentSnapshot?: { id: string } } | undefined;
        const isReady =
          status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') &&
          status.currentSnapshot?.id !== snapshotOtherThan;
        last = object;
        return isReady ? object : undefined;
      },
      { diagnose: () => `last seen: ${JSON.stringify(last).slice(0, 2000)}` },
    );
  };
  const inlineCsv = (name: string) => ({
    name: 'list',
    format: 'csv',
    inline: `name,fhirBaseUrl\n${name},https://fhir.${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.example/r4\n`,
  });
  /** The HL7 example bundle (a brand with a data: logo) as a ConfigMap source of its own. */
  async function hl7ConfigMap(): Promise<{
    name: string;
    format: string;
    configMapRef: { name: string; key: string };
    priority: number;
  }> {
    const name = unique('hl7-example');
    await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name },
        data: { 'bundle.json': brandFile('smart-app-launch-examples/Bundle-example1.json') },
      },
    });
    return { name: 'hl7', format: 'smart-brands-bundle', configMapRef: { name, key: 'bundle.json' }, priority: 10 };
  }

  it('publishes an applied catalog (https, ConfigMap and inline sources): Ready, counts, snapshot, and the API serves it', async () => {
    const a = startOperator('operator-a');
    const b = startOperator('operator-b');
    await create(
      catalogBody('brands', [
        {
          name: 'epic',
          format: 'fhir-endpoint-bundle',
          url: `${VENDOR}/epic-r4.json`,
          platformType: 'EPIC',
          priority: 20,
        },
        await hl7ConfigMap(),
        {
          name: 'local',
          format: 'csv',
          inline: 'name,fhirBaseUrl,state\nPortico Test Clinic,https://fhir.portico-test.example/r4,MA\n',
        },
      ]),
    );
    const object = await ready('brands');
    const status = object.status as Record<string, any>;
    expect(object.metadata.finalizers).to.include(FINALIZER);
    expect(status.observedGeneration).to.equal(object.metadata.generation);
    expect(status.brandCount).to.equal(304 + 1 + 1);
    expect(status.duplicatesMerged).to.equal(12);
    expect(status.logos.rendered, `logos: ${JSON.stringify(status.logos)}`).to.be.greaterThan(0);
    expect(status.currentSnapshot.brandCount).to.equal(304 + 1 + 1);
    expect(status.sources.map((s: { name: string }) => s.name)).to.deep.equal(['epic', 'hl7', 'local']);

    await until(
      'the API to serve the new catalog',
      async () => (await api.request('GET', '/api/sdk/v1/catalog/brands?q=portico%20test')).body.count === 1,
    );
    // One leader: only one instance reconciled.
    expect([a.controller.reconciles > 0, b.controller.reconciles > 0].filter(Boolean)).to.have.length(1);
    expect([a.elector.isLeader, b.elector.isLeader].filter(Boolean)).to.have.length(1);
  });

  it('publishes a new snapshot when the spec changes, and records an Event', async () => {
    startOperator('operator-a');
    const name = unique('changing');
    await create(catalogBody(name, [inlineCsv('Portico First Clinic')]));
    const before = (await ready(name)).status as { currentSnapshot: { id: string } };
    await custom.patchNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace,
      name,
      body: [
        {
          op: 'replace',
          path: '/spec/sources/0/inline',
          value: 'name,fhirBaseUrl\nPortico Second Clinic,https://fhir.portico-second.example/r4\n',
        },
      ],
    });
    const after = await ready(name, before.currentSnapshot.id);
    expect((after.status as { currentSnapshot: { id: string } }).currentSnapshot.id).to.not.equal(
      before.currentSnapshot.id,
    );
    // The Event is written right after the status: wait for it rather than race it.
    await until('a second Published event', async () => {
      const events = await core.listNamespacedEvent({ namespace });
      return events.items.filter((e) => e.involvedObject.name === name && e.reason === 'Published').length >= 2;
    });
  });

  it('hands over to the other instance when the leader stops', async () => {
    const pair = [startOperator('operator-a'), startOperator('operator-b')];
    await until('one instance to lead', async () => pair.some((i) => i.elector.isLeader));
    const leader = pair.find((i) => i.elector.isLeader)!;
    const follower = pair.find((i) => i !== leader)!;
    await leader.stop();
    await until('the other instance to lead', async () => follower.elector.isLeader && follower.controller.running);
    expect(leader.controller.running).to.equal(false); // the old leader's controller stopped with its lease
    const name = unique('after-handover');
    await create(catalogBody(name, [inlineCsv('Portico Handover Clinic')]));
    await ready(name);
  });

  it('stops for good, as production exits, when another holder takes the lease', async () => {
    const instance = startOperator('operator-a');
    await until('leading', async () => instance.elector.isLeader && instance.controller.running);
    const coordination = kubeconfig.makeApiClient(CoordinationV1Api);
    const lease = await coordination.readNamespacedLease({ namespace, name: 'portico-catalog-operator' });
    lease.spec!.holderIdentity = 'usurper';
    lease.spec!.renewTime = microTime(new Date());
    lease.spec!.leaseDurationSeconds = 3600; // a live lease the instance may not take back
    await coordination.replaceNamespacedLease({ namespace, name: 'portico-catalog-operator', body: lease });
    await until('the instance to give up', async () => instance.exitCode !== undefined && !instance.controller.running);
    expect(instance.exitCode).to.equal(1);
    expect(instance.elector.isLeader).to.equal(false);
    await coordination.deleteNamespacedLease({ namespace, name: 'portico-catalog-operator' }); // the next test starts unheld
  });

  it('recovers from an expired watch (410 Gone) by relisting, and keeps seeing changes', async () => {
    const seen: string[] = [];
    const informer = new CatalogInformer(
      new KubeClient(kubeconfig),
      { onChange: (c) => seen.push(c.metadata.name), onDelete: () => {} },
      { relistMs: 60_000, watchdogMs: 60_000 },
      logger,
    );
    await informer.start();
    try {
      const lists = informer.stats.lists;
      await informer.resumeFrom('1'); // long compacted away
      await until(
        'the watch to expire and the informer to relist',
        async () => informer.stats.expired > 0 && informer.stats.lists > lists,
      );
      const name = unique('after-expiry');
      await create(catalogBody(name, [inlineCsv('X')]));
      await until('the new object through the resumed watch', async () => seen.includes(name));
    } finally {
      informer.stop();
    }
  });

  it("reports a failing source: Ready=False/ReconcileFailed, the source's error, a Warning Event, and retries", async () => {
    startOperator('operator-a');
    let calls = 0;
    nock(VENDOR)
      .persist()
      .get('/flaky.json')
      .reply(() => {
        calls++;
        return [503, 'x'.repeat(100_000)];
      });
    const name = unique('flaky');
    await create(catalogBody(name, [{ name: 'vendor', format: 'csv', url: `${VENDOR}/flaky.json` }]));
    const failed = await until('ReconcileFailed', async () => {
      const object = await read(name);
      const conditions =
        (
          object.status as
            { conditions?: { type: string; status: string; reason: string; message: string }[] } | undefined
        )?.conditions ?? [];
      return conditions.find((c) => c.type === 'Ready' && c.status === 'False' && c.reason === 'ReconcileFailed')
        ? object
        : undefined;
    });
    const status = failed.status as { sources: { name: string; error?: string }[]; conditions: { message: string }[] };
    expect(status.sources[0]).to.include({ name: 'vendor' });
    expect(status.sources[0]!.error).to.match(/503/);
    expect(Math.max(...status.conditions.map((c) => c.message.length))).to.be.at.most(1024);
    await until('a ReconcileFailed event', async () =>
      (await core.listNamespacedEvent({ namespace })).items.some(
        (e) => e.involvedObject.name === name && e.reason === 'ReconcileFailed' && e.type === 'Warning',
      ),
    );
    await until('a retry with backoff', async () => calls >= 2);
    await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, name });
  });

  it('holds back a snapshot whose brand count collapses: Stalled/BrandCountDrop, the previous one stays active', async () => {
    startOperator('operator-a');
    const name = unique('guarded');
    const csv = (n: number) =>
      `name,fhirBaseUrl\n${Array.from({ length: n }, (_, i) => `Guarded Clinic ${i},https://fhir.guarded-${i}.example/r4`).join('\n')}\n`;
    const body = catalogBody(name, [{ name: 'list', format: 'csv', inline: csv(4) }]);
    body.spec.rollout.minBrandRatioPercent = 50;
    await create(body);
    const first = (await ready(name)).status as { currentSnapshot: { id: string } };
    await custom.patchNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace,
      name,
      body: [{ op: 'replace', path: '/spec/sources/0/inline', value: csv(1) }],
    });
    const stalled = await until('Stalled/BrandCountDrop', async () => {
      const object = await read(name);
      const conditions =
        (object.status as { conditions?: { type: string; status: string; reason: string }[] }).conditions ?? [];
      return conditions.some((c) => c.type === 'Stalled' && c.status === 'True' && c.reason === 'BrandCountDrop')
        ? object
        : undefined;
    });
    const status = stalled.status as {
      conditions: { type: string; status: string }[];
      currentSnapshot: { id: string };
    };
    expect(status.conditions.find((c) => c.type === 'Ready')!.status).to.equal('False');
    expect(status.currentSnapshot.id).to.equal(first.currentSnapshot.id);
    expect((await api.services.snapshots.active({ namespace, name }))!.snapshotId).to.equal(first.currentSnapshot.id);
  });

  it('does nothing for a suspended catalog but say so', async () => {
    startOperator('operator-a');
    const name = unique('paused');
    const body = catalogBody(name, [inlineCsv('Paused')]);
    (body.spec as Record<string, unknown>).suspend = true;
    await create(body);
    const object = await until('the Suspended condition', async () => {
      const current = await read(name);
      const conditions =
        (current.status as { conditions?: { type: string; reason: string }[] } | undefined)?.conditions ?? [];
      return conditions.some((c) => c.type === 'Reconciling' && c.reason === 'Suspended') ? current : undefined;
    });
    expect((object.status as { currentSnapshot?: unknown }).currentSnapshot).to.equal(undefined);
    expect(await api.services.snapshots.active({ namespace, name })).to.equal(null);
  });

  it('counts and logs an Event it cannot write, once, and still publishes', async () => {
    class NoEvents extends KubeClient {
      override async event(): Promise<void> {
        throw new Error('events are refused');
      }
    }
    const metrics = new OperatorMetrics();
    const lines: string[] = [];
    const captured = pino({ level: 'warn' }, { write: (line: string) => lines.push(line) });
    startOperator('operator-a', { kube: new NoEvents(kubeconfig), metrics, logger: captured });
    const name = unique('eventless');
    await create(catalogBody(name, [inlineCsv('Portico Eventless Clinic')]));
    await ready(name);
    await until('the failure to be counted', async () =>
      (await metrics.registry.getSingleMetricAsString('portico_operator_event_write_failures_total')).includes(
        'reason="Published"} 1',
      ),
    );
    const logged = lines
      .map((l) => JSON.parse(l) as { msg: string; reason?: string })
      .filter((l) => l.msg === 'could not record a Kubernetes Event');
    expect(logged).to.have.length(1);
    expect(logged[0]).to.include({ reason: 'Published' });
  });

  it('deletes the catalog through its finalizer: snapshots and artwork go too', async () => {
    startOperator('operator-a');
    const name = unique('doomed');
    // Artwork no other catalog uses (a colour of its own), or it would rightly be kept.
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><rect width="64" height="64" fill="#${randomUUID().slice(0, 6)}"/></svg>`;
    const logoUrl = `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`;
    await create(
      catalogBody(name, [
        {
          name: 'list',
          format: 'csv',
          inline: `name,fhirBaseUrl,logoUrl\nDoomed Clinic,https://fhir.doomed.example/r4,"${logoUrl}"\n`,
        },
      ]),
    );
    const status = (await ready(name)).status as { currentSnapshot: { id: string } };
    const snapshot = await api.services.snapshots.load(status.currentSnapshot.id);
    const logoKey = snapshot!.brands.find((b) => b.logo)!.logo!.assets['128'];
    expect(await api.services.storage.exists(logoKey)).to.equal(true);
    await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, name });
    await until('the object to be gone', async () =>
      read(name).then(
        () => false,
        (error: { code?: number }) => error.code === 404,
      ),
    );
    expect(await api.services.snapshots.active({ namespace, name })).to.equal(null);
    expect(await api.services.snapshots.list({ namespace, name })).to.deep.equal([]);
    expect(await api.services.storage.exists(logoKey)).to.equal(false);
  });
});
