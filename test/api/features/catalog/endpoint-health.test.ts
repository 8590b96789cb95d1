// The endpoint health an API replica shows: the operator's checks of listed brands (moved onto a loopback stub)
// reach a replica through the Redis announcement (its polling slowed to a minute, so nothing else could
// explain it) and a replica without Redis by polling, with no new snapshot; brands that leave the snapshot
// drop out of the publication, a brand that joins is UNKNOWN (no entry) until its first check.
import { expect } from 'chai';
import nock from 'nock';
import { pino } from 'pino';
import { announceHealth } from '#core/catalog/announce.js';
import { EndpointHealthStore } from '#core/catalog/endpoint-health.js';
import type { CatalogBrand } from '#core/catalog/model.js';
import { systemClock, systemScheduler } from '#core/clock.js';
import { documentLocksFor } from '#core/infra/locks.js';
import { NO_HEALTH_VERSION } from '../../../../api/src/features/catalog/endpoint-health.js';
import { DEFAULT_TIMING } from '../../../../operator/src/health/settings.js';
import { CatalogHealthSweeper } from '../../../../operator/src/health/sweeper.js';
import { TestApi } from '../../../../testkit/api.js';
import { realSources } from '../../../../testkit/catalog.js';
import { FhirStub } from '../../../../testkit/fhir-stub.js';
import { settings, stubAgent, stubbedBrands } from '../../../../testkit/health.js';
import { until } from '../../../../testkit/until.js';

describe('api: published endpoint health', function () {
  this.timeout(60_000);
  let api: TestApi;
  let replica: TestApi;
  let stub: FhirStub;
  let sweeper: CatalogHealthSweeper | undefined;
  let brands: CatalogBrand[];

  before(async () => {
    nock.restore(); // the checks' real sockets
    stub = await FhirStub.start();
    // Polling slowed to its maximum: within these tests only the Redis announcement can bring news.
    api = await TestApi.start({ redis: true, env: { PORTICO_CATALOG_POLL_MS: '60000' } });
    replica = await TestApi.start({ replicaOf: api }); // no Redis: polling every 200 ms
    // Oracle Health, Epic and the HL7 example, moved onto the stub: a few hundred brands, most on one host.
    brands = stubbedBrands(realSources(), stub).slice(0, 300);
  });
  after(async () => {
    await sweeper?.stop();
    nock.activate();
    await replica?.close();
    await api?.close();
    await stub?.close();
  });

  async function activate(list: CatalogBrand[]): Promise<string> {
    const { header } = await api.services.snapshots.write(api.config.catalog, list);
    const current = await api.services.snapshots.active(api.config.catalog);
    expect(await api.services.snapshots.activate(api.config.catalog, header.id, current?.snapshotId ?? null)).to.equal(
      true,
    );
    await Promise.all([api.services.activeCatalog.refresh(), replica.services.activeCatalog.refresh()]);
    return header.id;
  }

  it('shows what the operator published, on every replica, without a new snapshot', async () => {
    const down = brands[0]!;
    const degraded = brands.find((b) => new URL(b.fhirBaseUrl).hostname !== new URL(down.fhirBaseUrl).hostname)!;
    stub.behaviour = (request) => {
      if (
        request.path.startsWith(new URL(down.fhirBaseUrl).pathname) &&
        request.host === new URL(down.fhirBaseUrl).hostname
      )
        return { status: 503 };
      if (request.host === new URL(degraded.fhirBaseUrl).hostname && request.path.endsWith('/smart-configuration'))
        return { status: 404 };
      return undefined;
    };
    const snapshotId = await activate(brands);
    expect(api.services.endpointHealth.version).to.equal(NO_HEALTH_VERSION);
    expect(api.services.endpointHealth.get(down.id)).to.equal(undefined);

    const ref = api.config.catalog;
    const configured = settings({ perHostRate: { count: 500, periodMs: 1000 } });
    sweeper = new CatalogHealthSweeper({
      ref,
      snapshots: api.services.snapshots,
      store: new EndpointHealthStore(api.mongo.db, await documentLocksFor(api.mongo.db, api.redis), systemClock),
      settings: configured,
      timing: { ...DEFAULT_TIMING, catchUpMs: 0, publishDelayMs: 100, refreshPublishMs: 500, snapshotPollMs: 200 },
      agent: stubAgent(configured),
      clock: systemClock,
      scheduler: systemScheduler,
      logger: pino({ level: 'silent' }),
      announce: (version) => announceHealth(api.redis!, ref, version),
    });
    const checksFrom = Date.now();
    await sweeper.start();
    await until(
      'every brand checked and published',
      () => sweeper!.summary().counts.UNKNOWN === 0 && sweeper!.summary().version,
    );
    for (const served of [api, replica]) {
      // A publication with every brand, this one or a later one (the sweeper republishes as outcomes age):
      // waiting for one exact version could miss it on a busy machine.
      await until(`${served === api ? 'the announced' : 'the polled'} publication`, () =>
        brands.every((b) => (served.services.endpointHealth.get(b.id)?.status ?? 'UNKNOWN') !== 'UNKNOWN'),
      );
      // Never seen answering, so DOWN at once (only a DOWN after UP or DEGRADED waits for a confirming check).
      expect(served.services.endpointHealth.get(down.id)).to.deep.include({
        status: 'DOWN',
        fhirVersion: null,
        smartConfiguration: false,
      });
    }
    expect(api.services.endpointHealth.get(degraded.id)).to.deep.include({
      status: 'DEGRADED',
      fhirVersion: '4.0.1',
      smartConfiguration: false,
    });
    const up = brands.find(
      (b) => b !== down && b !== degraded && new URL(b.fhirBaseUrl).hostname !== new URL(degraded.fhirBaseUrl).hostname,
    )!;
    expect(api.services.endpointHealth.get(up.id)).to.deep.include({
      status: 'UP',
      fhirVersion: '4.0.1',
      smartConfiguration: true,
    });
    expect(Date.parse(api.services.endpointHealth.get(up.id)!.checkedAt!)).to.be.within(checksFrom, Date.now());
    // The snapshot is the one activated before the checks: health never rebuilt it.
    expect(api.services.activeCatalog.get()!.snapshotId).to.equal(snapshotId);
    expect((await api.services.snapshots.list(api.config.catalog)).map((h) => h.id)).to.deep.equal([snapshotId]);
  });

  it('drops a brand that left the snapshot, and shows a brand that joined only once it is checked', async () => {
    const [leaving, ...staying] = brands;
    const joining: CatalogBrand = {
      ...staying[0]!,
      id: 'joining-brand',
      name: 'Joining Health',
      fhirBaseUrl: stub.baseUrl('joining.fhir.test'),
    };
    stub.behaviour = (request) =>
      request.host === 'joining.fhir.test'
        ? { status: 200, body: '{"resourceType":"CapabilityStatement","fhirVersion":"4.0.1"}', delayMs: 1500 }
        : undefined;
    const before = api.services.endpointHealth.version;
    expect(api.services.endpointHealth.get(leaving!.id)).to.not.equal(undefined);
    await activate([...staying, joining]);
    // The operator follows the snapshot: the leaver's entry goes in the next publication, while the joiner's
    // first check (a slow server) is still under way.
    await until(
      'the leaver dropped',
      () =>
        api.services.endpointHealth.version !== before && api.services.endpointHealth.get(leaving!.id) === undefined,
    );
    expect(api.services.endpointHealth.get(joining.id)).to.equal(undefined); // UNKNOWN
    await until('the joiner checked', () => api.services.endpointHealth.get(joining.id));
    expect(api.services.endpointHealth.get(joining.id)).to.deep.include({
      status: 'DEGRADED',
      fhirVersion: '4.0.1',
      smartConfiguration: false,
    });
  });
});
