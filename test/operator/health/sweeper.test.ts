// A catalog's endpoint checks end to end against a loopback stub, over real brand lists moved onto it: a host
// carrying 2,000 eClinicalWorks brands is never asked more than its limits allow while other hosts go ahead,
// checks are spread over the interval and then one interval apart, and a restarted operator resumes from its
// last publication (no burst, validators sent, 304s keeping the outcomes).
import { expect } from 'chai';
import nock from 'nock';
import { pino } from 'pino';
import { EndpointHealthStore } from '../../../core/src/catalog/endpoint-health.js';
import type { CatalogBrand } from '../../../core/src/catalog/model.js';
import { SnapshotStore, type CatalogRef } from '../../../core/src/catalog/snapshots.js';
import { systemClock } from '../../../core/src/clock.js';
import { DEFAULT_TIMING, type HealthSettings, type HealthTiming } from '../../../operator/src/health/settings.js';
import { CatalogHealthSweeper } from '../../../operator/src/health/sweeper.js';
import { realSource } from '../../support/catalog.js';
import { withTestDatabase, type TestDatabase } from '../../support/database.js';
import { FhirStub } from '../../support/fhir-stub.js';
import { eventually, settings, stubAgent, stubbedBrands } from '../../support/health.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

describe('operator: endpoint health sweeps', function () {
  this.timeout(90_000);
  let database: TestDatabase;
  withTestDatabase((d) => (database = d));
  let stub: FhirStub;
  let epic: CatalogBrand[];
  let sweepers: CatalogHealthSweeper[] = [];

  before(async () => {
    nock.restore(); // real sockets through the operator's agent
    stub = await FhirStub.start();
    // Epic's 2022 R4 list: one brand per host, but for a few (Kaiser's eight share one).
    const hosts = new Set<string>();
    epic = stubbedBrands([realSource('epic', 'fhir-endpoint-bundle', 'epic-legacy-2022/epic_endpoints_r4.json', 'EPIC')], stub).filter((b) => {
      const host = new URL(b.fhirBaseUrl).hostname;
      return !hosts.has(host) && Boolean(hosts.add(host));
    });
  });
  after(async () => {
    nock.activate();
    await stub.close();
  });
  beforeEach(() => {
    stub.reset();
    stub.behaviour = () => undefined;
  });
  afterEach(async () => {
    for (const sweeper of sweepers) await sweeper.stop();
    sweepers = [];
  });

  const snapshots = () => new SnapshotStore(database.db, database.locks, systemClock);
  const store = () => new EndpointHealthStore(database.db, database.locks, systemClock);
  let serial = 0;
  const newRef = (): CatalogRef => ({ namespace: 'health', name: `c${++serial}` });

  async function activate(ref: CatalogRef, brands: CatalogBrand[]): Promise<string> {
    const { header } = await snapshots().write(ref, brands);
    const current = await snapshots().active(ref);
    await snapshots().activate(ref, header.id, current?.snapshotId ?? null);
    return header.id;
  }

  function sweeper(ref: CatalogRef, limits: Partial<HealthSettings>, timing: Partial<HealthTiming> = {}): CatalogHealthSweeper {
    const configured = settings(limits);
    const created = new CatalogHealthSweeper({
      ref,
      snapshots: snapshots(),
      store: store(),
      settings: configured,
      timing: { ...DEFAULT_TIMING, catchUpMs: 0, publishDelayMs: 100, refreshPublishMs: 300, snapshotPollMs: 200, ...timing },
      agent: stubAgent(configured),
      clock: systemClock,
      logger,
    });
    sweepers.push(created);
    return created;
  }

  it('holds a host carrying 2,000 real brands to its limits (2 at once, its rate) while 100 other hosts go ahead', async () => {
    const ecw = stubbedBrands([realSource('ecw', 'lantern-endpoints', 'lantern-prod_resources/eClinicalWorks_LLC_EndpointSources.json', 'ECLINICALWORKS')], stub).slice(0, 2000);
    const busyHost = new URL(ecw[0]!.fhirBaseUrl).hostname;
    expect(new Set(ecw.map((b) => new URL(b.fhirBaseUrl).hostname))).to.deep.equal(new Set([busyHost]));
    const others = epic.filter((b) => new URL(b.fhirBaseUrl).hostname !== busyHost).slice(0, 100);
    const ref = newRef();
    await activate(ref, [...ecw, ...others]);
    const rate = 300;
    const started = performance.now();
    const checks = sweeper(ref, { concurrency: 16, perHostConcurrency: 2, perHostRate: { count: rate, periodMs: 1000 } });
    await checks.start(); // every brand is due at once (no catch-up window): the limits alone pace them
    await eventually('every brand checked and published', () => checks.summary().counts.UP === ecw.length + others.length, 60_000);
    const seconds = (performance.now() - started) / 1000;

    const busy = stub.statsOf(busyHost);
    const report = { requests: busy.requests, peakInFlight: busy.peakInFlight, peakConnections: busy.peakConnections, peakPerSecond: stub.peakRate(busyHost), seconds: Number(seconds.toFixed(1)) };
    console.log(`      ${busyHost}: ${JSON.stringify(report)}`);
    expect(busy.requests).to.equal(4000);
    expect(busy.peakInFlight).to.equal(2);
    expect(busy.peakConnections).to.be.within(1, 2);
    expect(stub.peakRate(busyHost)).to.be.at.most(rate);
    expect(seconds).to.be.above(4000 / rate - 1);
    // The other hosts were not stuck behind the busy one's queue: all of them answered in the first seconds.
    const lastOther = Math.max(...others.map((b) => stub.statsOf(new URL(b.fhirBaseUrl).hostname).starts.at(-1)!));
    expect(lastOther - busy.starts[0]!).to.be.below(3000);
    for (const brand of others) expect(stub.statsOf(new URL(brand.fhirBaseUrl).hostname).peakInFlight).to.be.at.most(2);
  });

  it('spreads first checks over the catch-up window, then checks each brand one interval after the last', async () => {
    const brands = epic.slice(0, 180);
    const ref = newRef();
    await activate(ref, brands);
    const interval = 3000;
    const started = performance.now();
    await sweeper(ref, { intervalMs: interval, perHostRate: { count: 100, periodMs: 1000 } }, { catchUpMs: interval }).start();
    await eventually('three rounds of checks', () => brands.every((b) => stub.statsOf(new URL(b.fhirBaseUrl).hostname).requests >= 6), 20_000);
    // When each brand's checks began (the first of each check's two requests; one brand per host).
    const rounds = new Map(brands.map((b) => new URL(b.fhirBaseUrl).hostname).map((host) => [host, stub.statsOf(host).starts.map((t) => t - started).filter((_, i) => i % 2 === 0)]));
    // Round one: 180 brands over 3 s, no half-second with more than twice its share (30) or less than 40% of it.
    // (Late ones fall into the last: client and stub share one event loop, and each new host costs a handshake.)
    const firstAt = Math.min(...[...rounds.values()].map((times) => times[0]!));
    const buckets = new Array(6).fill(0) as number[];
    for (const times of rounds.values()) buckets[Math.min(5, Math.floor((times[0]! - firstAt) / 500))]!++;
    console.log(`      first checks per half second: ${buckets.join(' ')}`);
    for (const count of buckets) expect(count).to.be.within(12, 60);
    // Round three follows round two by one interval, brand by brand: the median exactly, each within the lateness
    // a loaded machine adds to a timer (a late check leaves a shorter gap to the next, which is on time).
    const gaps = [...rounds.values()].map((times) => times[2]! - times[1]!).sort((a, b) => a - b);
    expect(gaps[Math.floor(gaps.length / 2)]!).to.be.within(interval - 100, interval + 100);
    for (const gap of gaps) expect(gap).to.be.within(interval - 600, interval + 600);
  });

  it('resumes after a restart from the last publication: no burst, validators sent, 304s keep the outcomes', async () => {
    const brands = epic.slice(0, 60);
    const ref = newRef();
    await activate(ref, brands);
    const interval = 4000;
    const first = sweeper(ref, { intervalMs: interval });
    await first.start();
    await eventually('all checked', () => first.summary().counts.UP === 60);
    await first.stop();
    const before = (await store().load(ref)) as { health: Map<string, { checkedAt: string | null }> };
    stub.reset();

    const restarted = sweeper(ref, { intervalMs: interval });
    const resumedAt = performance.now();
    const wallAt = (stubTime: number) => Date.now() - (performance.now() - stubTime);
    await restarted.start();
    expect(restarted.summary().counts).to.deep.equal({ UP: 60, DEGRADED: 0, DOWN: 0, UNKNOWN: 0 }); // known at once
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(stub.requests, 'requests just after the restart').to.have.length(0);
    const host = (b: CatalogBrand) => new URL(b.fhirBaseUrl).hostname;
    await eventually('every brand checked again', () => brands.every((b) => stub.statsOf(host(b)).requests >= 2), 10_000);
    expect(performance.now() - resumedAt).to.be.below(interval * 1.5 + 1000);
    // Each brand's first check after the restart (one brand per host): both requests conditional, answered 304.
    const firstChecks = brands.flatMap((b) => stub.requests.filter((r) => r.host === host(b)).slice(0, 2));
    expect(firstChecks).to.have.length(120);
    for (const request of firstChecks) expect(request.headers['if-none-match'], `${request.host}${request.path}`).to.be.oneOf(['"cs-1"', '"smart-1"']);
    // None sooner than half an interval after the brand's check before the restart.
    for (const brand of brands) {
      const gap = wallAt(stub.statsOf(host(brand)).starts[0]!) - Date.parse(before.health.get(brand.id)!.checkedAt!);
      expect(gap, brand.id).to.be.at.least(interval / 2 - 50);
    }
    await eventually('the refreshed check times published', async () => {
      const after = (await store().load(ref)) as { health: Map<string, { status: string; checkedAt: string | null }> };
      return brands.every((b) => after.health.get(b.id)!.status === 'UP' && after.health.get(b.id)!.checkedAt! > before.health.get(b.id)!.checkedAt!);
    });
  });
});
