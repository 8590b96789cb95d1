// Endpoint health in the operator against a real Kubernetes API server: a BrandCatalog with healthChecks gets
// its counts in status (and in metrics) from checks the leader makes (against a loopback stub standing in for
// the brands' FHIR servers), the API shows the outcomes, new settings restart the checks where they were,
// `enabled: false` pauses them, removing healthChecks removes the publication and the counts, and deleting the
// catalog removes everything. The checks run on manual time (their clock and timers), moved on by the test:
// what is due when is read from that clock, and "nothing is checked before its turn" is shown by moving it up
// to the turn, not by sleeping on a busy machine's clock.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import nock from 'nock';
import { pino } from 'pino';
import { systemClock } from '#core/clock.js';
import type { EndpointHealth } from '#core/catalog/model.js';
import { documentLocksFor } from '#core/infra/locks.js';
import { GROUP, KubeClient, PLURAL, VERSION, type BrandCatalogObject } from '../../../operator/src/shared/kube.js';
import { OperatorMetrics } from '../../../operator/src/shared/metrics.js';
import { startOperator, type OperatorInstance } from '../../../operator/src/controller/operator.js';
import { EndpointHealthStore } from '#core/catalog/endpoint-health.js';
import { HealthMonitor } from '../../../operator/src/health/monitor.js';
import { TestApi } from '../../../testkit/api.js';
import { brandFile, csvField } from '../../../testkit/brand-data.js';
import { installBrandCatalogCrd } from '../../../testkit/brandcatalog-crd.js';
import { ManualTime } from '../../../testkit/clock.js';
import { FhirStub } from '../../../testkit/fhir-stub.js';
import { stubAgent } from '../../../testkit/health.js';
import { KUBERNETES_START_TIMEOUT_MS, testKubernetes } from '../../../testkit/kubernetes.js';
import { until } from '../../../testkit/until.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

describe('operator: endpoint health against a real Kubernetes API server', function () {
  this.timeout(120_000);
  let kubeconfig: KubeConfig;
  let custom: CustomObjectsApi;
  let namespace: string;
  let api: TestApi;
  let stub: FhirStub;
  let instance: OperatorInstance | undefined;
  let metrics: OperatorMetrics;
  let health: HealthMonitor;
  let store: EndpointHealthStore;
  const name = 'checked';
  /** The checks' clock and timers. */
  const time = new ManualTime();
  /** The catalog's healthChecks.interval. */
  const INTERVAL = 5 * 60_000;

  before(async function () {
    this.timeout(KUBERNETES_START_TIMEOUT_MS);
    ({ kubeconfig } = await testKubernetes());
    await installBrandCatalogCrd(kubeconfig);
    namespace = `h-${randomUUID().slice(0, 8)}`;
    await kubeconfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    custom = kubeconfig.makeApiClient(CustomObjectsApi);
    nock.restore(); // the checks' real sockets
    stub = await FhirStub.start();
    api = await TestApi.start({ env: { PORTICO_CATALOG: `${namespace}/${name}` } });
    store = new EndpointHealthStore(api.mongo.db, await documentLocksFor(api.mongo.db), time);
  });
  after(async () => {
    await instance?.stop();
    nock.activate();
    await api?.close();
    await stub?.close();
  });

  function start(): OperatorInstance {
    const kube = new KubeClient(kubeconfig);
    metrics = new OperatorMetrics();
    health = new HealthMonitor({
      snapshots: api.services.snapshots,
      store,
      kube,
      clock: time,
      scheduler: time,
      logger,
      metrics,
      agentFor: (settings) => stubAgent(settings),
      timing: { catchUpMs: 0, publishDelayMs: 100, refreshPublishMs: 1000, snapshotPollMs: 60_000 },
      statusEveryMs: 200,
    });
    return startOperator({
      kube,
      deps: {
        store: api.services.snapshots,
        storage: api.services.storage,
        clock: systemClock,
        logger,
        metrics,
        health,
        fetchText: () => Promise.reject(new Error('no https sources here')),
      },
      controller: {
        informer: { relistMs: 60_000, watchdogMs: 60_000 },
        queue: { baseDelayMs: 200, maxDelayMs: 2000 },
        workers: 2,
      },
      lease: {
        namespace,
        name: 'portico-catalog-operator',
        identity: 'health-test',
        leaseDurationSeconds: 3,
        retryMs: 300,
        renewDeadlineMs: 2000,
      },
      logger,
      onLostLeadership: () => void instance?.stop(),
    });
  }

  const read = async () =>
    (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace,
      name,
    })) as BrandCatalogObject;
  const patch = (body: object[]) =>
    custom.patchNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, name, body });
  const status = async () => (await read()).status ?? {};
  const answered = () =>
    until('the checks under way to be answered', () => health.requestsInFlight === 0, { intervalMs: 1 });
  /**
   * Moves the checks' time on, timer by timer and each time once the requests under way are answered, until
   * `probe` holds; the operator's reconciles and the API run on real time meanwhile.
   */
  const advanceUntil = <T>(what: string, probe: () => Promise<T | false | undefined>): Promise<T> =>
    until(
      what,
      async () => {
        await answered();
        const value = await probe();
        if (!value) await time.next();
        return value;
      },
      { intervalMs: 1 },
    );

  it('checks the brands while leading and writes the counts to status and metrics; the API shows the outcomes', async () => {
    // Brand names from the Oracle Health list fixture, their endpoints on the stub: three healthy, one without a SMART
    // configuration, one failing.
    const names = (
      JSON.parse(brandFile('oracle-health/millennium_patient_r4_endpoints.json')) as {
        entry: { resource: { resourceType: string; name?: string } }[];
      }
    ).entry
      .map((e) => e.resource)
      .filter((r) => r.resourceType === 'Organization' && r.name)
      .slice(0, 5)
      .map((r) => r.name!);
    expect(names).to.have.length(5);
    const hosts = ['up-1', 'up-2', 'up-3', 'degraded', 'down'];
    const csv = [
      'name,fhirBaseUrl',
      ...names.map((n, i) => `${csvField(n)},${stub.baseUrl(`${hosts[i]}.fhir.test`)}`),
    ].join('\n');
    stub.behaviour = (request) =>
      request.host === 'down.fhir.test'
        ? { status: 500 }
        : request.host === 'degraded.fhir.test' && request.path.endsWith('/smart-configuration')
          ? { status: 404 }
          : undefined;

    const sweptFrom = time.monotonic();
    instance = start();
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'BrandCatalog',
        metadata: { name, namespace },
        spec: {
          sources: [{ name: 'oracle-names', format: 'csv', inline: csv }],
          refreshInterval: '1h',
          healthChecks: { interval: `${INTERVAL / 60_000}m`, perHostRate: '50/s' },
        },
      },
    });
    const counted = await advanceUntil('endpoint counts in status', async () => {
      const current = await status();
      return current.endpointsUp === 3 && current.lastHealthSweepAt !== undefined && current;
    });
    expect(counted).to.include({
      brandCount: 5,
      endpointsUp: 3,
      endpointsDegraded: 1,
      endpointsDown: 1,
      endpointsUnknown: 0,
    });
    expect(Date.parse(counted.lastHealthSweepAt as string)).to.be.within(sweptFrom, time.monotonic());

    const exposition = await metrics.registry.metrics();
    const catalog = `${namespace}/${name}`;
    expect(exposition).to.include(`portico_operator_endpoints{catalog="${catalog}",status="UP"} 3`);
    expect(exposition).to.include(`portico_operator_endpoints{catalog="${catalog}",status="DOWN"} 1`);
    expect(exposition).to.match(/portico_operator_endpoint_checks_total\{outcome="up"\} [3-9]/);
    expect(exposition).to.match(
      /portico_operator_endpoint_requests_total\{document="metadata",result="http-5xx"\} [1-9]/,
    );

    await api.services.activeCatalog.refresh();
    await api.services.endpointHealth.refresh();
    const served = api.services.activeCatalog.get()!.index;
    const byName = (n: string) => api.services.endpointHealth.get(served.search(n, { limit: 1 }).brands[0]!.id);
    expect(byName(names[0]!)).to.deep.include({ status: 'UP', fhirVersion: '4.0.1', smartConfiguration: true });
    expect(byName(names[4]!)).to.deep.include({ status: 'DOWN' });
    // Over HTTP: search and lookup show the outcome, and status=up keeps the working endpoints only.
    const search = async (query: string) =>
      (await api.request('GET', `/api/sdk/v1/catalog/brands?${query}`)).body.brands as {
        id: string;
        name: string;
        endpoint: Record<string, unknown>;
      }[];
    const [up] = await search(`q=${encodeURIComponent(names[0]!)}&limit=1`);
    expect(up!.endpoint).to.deep.include({ status: 'UP', fhirVersion: '4.0.1', smartConfiguration: true });
    expect(up!.endpoint.checkedAt).to.be.a('string');
    expect((await api.request('GET', `/api/sdk/v1/catalog/brands/${up!.id}`)).body.brand.endpoint).to.deep.equal(
      up!.endpoint,
    );
    const working = await search('near=10001&status=up&limit=100');
    expect(working.map((b) => b.name))
      .to.include(names[0]!)
      .and.not.include(names[4]!);
    for (const brand of working) expect(brand.endpoint.status).to.equal('UP');
  });

  it('restarts the checks with new settings from the last publication: nothing is checked again at once', async () => {
    stub.reset();
    await patch([{ op: 'replace', path: '/spec/healthChecks/concurrency', value: 8 }]);
    await until('the new settings', () => health.settingsOf(`${namespace}/${name}`)?.concurrency === 8);
    // Every brand keeps its turn, half an interval after its last check at least: time moves up to the first
    // brand's, every timer due meanwhile fires, and no brand is asked.
    const published = (await store.load({ namespace, name })) as { health: Map<string, EndpointHealth> };
    const firstTurn = Math.min(...[...published.health.values()].map((h) => Date.parse(h.checkedAt!))) + INTERVAL / 2;
    expect(firstTurn - time.monotonic(), 'time left before the first turn').to.be.above(1);
    await time.tick(firstTurn - 1 - time.monotonic());
    await answered();
    expect(stub.requests).to.have.length(0);
    expect(await status()).to.include({ endpointsUp: 3, endpointsDown: 1 });
  });

  it('pauses with enabled: false, and removes the publication and the counts when healthChecks goes', async () => {
    await patch([{ op: 'replace', path: '/spec/healthChecks/enabled', value: false }]);
    await until('the checks paused', () => health.catalogs.length === 0);
    stub.reset();
    // One and a half intervals: checks still running would have asked every brand by then.
    await time.tick(INTERVAL * 1.5 + 1);
    await answered();
    expect(stub.requests).to.have.length(0);
    expect((await status()).endpointsUp).to.equal(3); // the last counts stay while paused
    expect(await store.pointer({ namespace, name })).to.not.equal(null); // kept while paused

    await patch([{ op: 'remove', path: '/spec/healthChecks' }]);
    await until('the counts removed from status', async () => (await status()).endpointsUp === undefined);
    expect(await store.pointer({ namespace, name })).to.equal(null);
    await api.services.endpointHealth.refresh();
    expect(api.services.endpointHealth.version).to.equal('0');
  });

  it('deletes the publication with the catalog', async () => {
    await patch([{ op: 'add', path: '/spec/healthChecks', value: {} }]);
    await advanceUntil('published again', async () => (await store.pointer({ namespace, name })) !== null);
    await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, name });
    await until('the catalog gone', async () =>
      read().then(
        () => false,
        () => true,
      ),
    );
    expect(await store.pointer({ namespace, name })).to.equal(null);
    const chunks = await api.mongo.db
      .collection('catalog_endpoint_health_chunks')
      .countDocuments({ catalog: `${namespace}/${name}` });
    expect(chunks).to.equal(0);
  });
});
