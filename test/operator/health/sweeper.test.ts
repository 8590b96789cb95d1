// A catalog's endpoint checks end to end against a loopback stub, over the brand list fixtures moved onto it: a host
// carrying 2,000 eClinicalWorks brands is never asked more than its limits allow while other hosts go ahead,
// checks are spread over the interval and then one interval apart, and a restarted operator resumes from its
// last publication (no burst, validators sent, 304s keeping the outcomes). The sweepers run on manual time
// (their clock, schedule and limits), moved from timer to timer once the requests under way are answered, so
// every request arrives at the stub at the instant it was due, and spacing is read from that clock: a slow
// machine makes the test slower, never wrong.
import { expect } from 'chai';
import nock from 'nock';
import { pino } from 'pino';
import { EndpointHealthStore } from '#core/catalog/endpoint-health.js';
import type { CatalogBrand } from '#core/catalog/model.js';
import { SnapshotStore, type CatalogRef } from '#core/catalog/snapshots.js';
import { phaseOf } from '../../../operator/src/health/schedule.js';
import { DEFAULT_TIMING, type HealthSettings, type HealthTiming } from '../../../operator/src/health/settings.js';
import { CatalogHealthSweeper } from '../../../operator/src/health/sweeper.js';
import { realSource } from '../../../testkit/catalog.js';
import { ManualTime } from '../../../testkit/clock.js';
import { withTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { FhirStub } from '../../../testkit/fhir-stub.js';
import { settings, stubAgent, stubbedBrands } from '../../../testkit/health.js';
import { until } from '../../../testkit/until.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const host = (brand: CatalogBrand) => new URL(brand.fhirBaseUrl).hostname;

describe('operator: endpoint health sweeps', function () {
  this.timeout(120_000);
  let database: TestDatabase;
  withTestDatabase((d) => (database = d));
  let stub: FhirStub;
  let epic: CatalogBrand[];
  let sweepers: CatalogHealthSweeper[] = [];
  let time: ManualTime;

  before(async () => {
    nock.restore(); // real sockets through the operator's agent
    stub = await FhirStub.start();
    // The Epic 2022 R4 list (synthetic, test/fixtures/brands): one brand per host, but for a few (the eight of
    // fhir.summitridge.example share one).
    const hosts = new Set<string>();
    epic = stubbedBrands(
      [realSource('epic', 'fhir-endpoint-bundle', 'epic-legacy-2022/epic_endpoints_r4.json', 'EPIC')],
      stub,
    ).filter((b) => {
      const name = host(b);
      return !hosts.has(name) && Boolean(hosts.add(name));
    });
  });
  after(async () => {
    nock.activate();
    await stub.close();
  });
  beforeEach(() => {
    time = new ManualTime();
    stub.reset();
    stub.behaviour = () => undefined;
    stub.now = () => time.monotonic();
  });
  afterEach(async () => {
    for (const sweeper of sweepers) await sweeper.stop();
    sweepers = [];
  });

  /**
   * Moves manual time from timer to timer, each time once every request under way is answered, until `done`.
   * Publications and snapshot reads are not waited for: time moves on meanwhile, as it would.
   */
  async function drive(what: string, done: () => boolean | Promise<boolean>): Promise<void> {
    for (let fired = 0; ; fired++) {
      await until('the requests under way to be answered', () => sweepers.every((s) => s.requestsInFlight === 0), {
        intervalMs: 1,
      });
      if (await done()) return;
      if (fired > 200_000 || !(await time.next()))
        throw new Error(`${what}: not after ${fired} timers (manual time ${time.now().toISOString()})`);
    }
  }

  const snapshots = () => new SnapshotStore(database.db, database.locks, time);
  const store = () => new EndpointHealthStore(database.db, database.locks, time);
  let serial = 0;
  const newRef = (): CatalogRef => ({ namespace: 'health', name: `c${++serial}` });

  async function activate(ref: CatalogRef, brands: CatalogBrand[]): Promise<string> {
    const { header } = await snapshots().write(ref, brands);
    const current = await snapshots().active(ref);
    await snapshots().activate(ref, header.id, current?.snapshotId ?? null);
    return header.id;
  }

  function sweeper(
    ref: CatalogRef,
    limits: Partial<HealthSettings>,
    timing: Partial<HealthTiming> = {},
  ): CatalogHealthSweeper {
    const configured = settings(limits);
    const created = new CatalogHealthSweeper({
      ref,
      snapshots: snapshots(),
      store: store(),
      settings: configured,
      timing: {
        ...DEFAULT_TIMING,
        catchUpMs: 0,
        publishDelayMs: 100,
        refreshPublishMs: 300,
        snapshotPollMs: 60_000,
        ...timing,
      },
      agent: stubAgent(configured),
      clock: time,
      scheduler: time,
      logger,
    });
    sweepers.push(created);
    return created;
  }

  it('holds a host carrying 2,000 real brands to its limits (at most 2 at once, its rate) while 100 other hosts go ahead', async function () {
    this.timeout(300_000); // 4,000 requests one token apart, each answered before time moves on: about 20 s, a minute on a loaded machine
    const ecw = stubbedBrands(
      [
        realSource(
          'ecw',
          'lantern-endpoints',
          'lantern-prod_resources/eClinicalWorks_LLC_EndpointSources.json',
          'ECLINICALWORKS',
        ),
      ],
      stub,
    ).slice(0, 2000);
    const busyHost = host(ecw[0]!);
    expect(new Set(ecw.map(host))).to.deep.equal(new Set([busyHost]));
    const others = epic.filter((b) => host(b) !== busyHost).slice(0, 100);
    const ref = newRef();
    await activate(ref, [...ecw, ...others]);
    const rate = 300;
    const checks = sweeper(ref, {
      concurrency: 16,
      perHostConcurrency: 2,
      perHostRate: { count: rate, periodMs: 1000 },
    });
    await checks.start(); // every brand is due at once (no catch-up window): the limits alone pace them
    await drive('every brand checked and published', () => checks.summary().counts.UP === ecw.length + others.length);

    const busy = stub.statsOf(busyHost);
    const seconds = (busy.starts.at(-1)! - busy.starts[0]!) / 1000;
    const report = {
      requests: busy.requests,
      peakInFlight: busy.peakInFlight,
      peakConnections: busy.peakConnections,
      peakPerSecond: stub.peakRate(busyHost),
      seconds: Number(seconds.toFixed(1)),
    };
    console.log(`      ${busyHost} (manual time): ${JSON.stringify(report)}`);
    expect(busy.requests).to.equal(4000);
    expect(busy.peakInFlight).to.be.within(1, 2);
    expect(busy.peakConnections).to.be.within(1, 2);
    // Its rate, on the clock the limits run by: no one-second window holds more, and 4,000 take their time.
    expect(stub.peakRate(busyHost)).to.be.at.most(rate);
    expect(seconds).to.be.at.least((4000 - 1) / rate);
    // The other hosts were not stuck behind the busy one's queue: all of them were asked before its tenth request.
    const lastOther = Math.max(...others.map((b) => stub.statsOf(host(b)).starts.at(-1)!));
    expect(lastOther).to.be.below(busy.starts[9]!);
    for (const brand of others) expect(stub.statsOf(host(brand)).peakInFlight).to.be.at.most(2);
  });

  it('spreads first checks over the catch-up window, then checks each brand one interval after the last', async () => {
    const brands = epic.slice(0, 180);
    const ref = newRef();
    await activate(ref, brands);
    const interval = 3000;
    const checks = sweeper(
      ref,
      { intervalMs: interval, perHostRate: { count: 100, periodMs: 1000 } },
      { catchUpMs: interval },
    );
    const started = time.monotonic();
    await checks.start();
    await drive('three rounds of checks', () => brands.every((b) => stub.statsOf(host(b)).requests >= 6));
    // When each brand's checks began (the first of each check's two requests; one brand per host). A timer
    // fires on a whole millisecond, so a check begins within 1 ms after the instant it is due.
    const wrong: string[] = [];
    for (const brand of brands) {
      const [first, second, third] = stub.statsOf(host(brand)).starts.filter((_, i) => i % 2 === 0) as [
        number,
        number,
        number,
      ];
      const phase = phaseOf(checks.key, brand.id) * interval;
      // Round one: at the brand's place in the catch-up window (phase × window), so 180 brands are a ramp over 3 s.
      if (!(first - started >= phase && first - started <= phase + 1))
        wrong.push(
          `${brand.id}: first check at ${first - started} ms, due at ${phase.toFixed(1)} ${JSON.stringify(stub.statsOf(host(brand)).starts.map((t) => t - started))} ${host(brand)}`,
        );
      // Round two: on its phase point of the interval, never sooner than half an interval after the first.
      const offset = (((second - phase) % interval) + interval) % interval;
      if (!(second - first >= interval / 2 && offset <= 1))
        wrong.push(
          `${brand.id}: second check ${second - first} ms after the first, ${offset.toFixed(1)} ms past its phase point`,
        );
      // Round three: one interval after the second.
      if (Math.abs(third - second - interval) > 1)
        wrong.push(`${brand.id}: third check ${third - second} ms after the second`);
    }
    expect(wrong).to.deep.equal([]);
  });

  it('resumes after a restart from the last publication: no burst, validators sent, 304s keep the outcomes', async () => {
    const brands = epic.slice(0, 60);
    const ref = newRef();
    await activate(ref, brands);
    const interval = 4000;
    const first = sweeper(ref, { intervalMs: interval });
    await first.start();
    await drive('all checked', () => first.summary().counts.UP === 60);
    await first.stop();
    sweepers = sweepers.filter((s) => s !== first);
    const before = (await store().load(ref)) as { health: Map<string, { checkedAt: string | null }> };
    stub.reset();

    const restarted = sweeper(ref, { intervalMs: interval });
    const resumedAt = time.monotonic();
    await restarted.start();
    expect(restarted.summary().counts).to.deep.equal({ UP: 60, DEGRADED: 0, DOWN: 0, UNKNOWN: 0 }); // known at once
    await drive('every brand checked again', () => brands.every((b) => stub.statsOf(host(b)).requests >= 2));
    // Each brand's first check after the restart (one brand per host): both requests conditional, answered 304.
    const firstChecks = brands.flatMap((b) => stub.requests.filter((r) => r.host === host(b)).slice(0, 2));
    expect(firstChecks).to.have.length(120);
    for (const request of firstChecks)
      expect(request.headers['if-none-match'], `${request.host}${request.path}`).to.be.oneOf(['"cs-1"', '"smart-1"']);
    // No burst: none sooner than half an interval after the brand's check before the restart, and every one
    // within one and a half intervals of it (its next phase point).
    for (const brand of brands) {
      const checkedAt = Date.parse(before.health.get(brand.id)!.checkedAt!);
      const again = stub.statsOf(host(brand)).starts[0]!;
      expect(again - checkedAt, brand.id).to.be.within(interval / 2, interval * 1.5 + 1);
      expect(again, brand.id).to.be.above(resumedAt);
    }
    await drive('the refreshed check times published', async () => {
      const after = (await store().load(ref)) as { health: Map<string, { status: string; checkedAt: string | null }> };
      return brands.every(
        (b) =>
          after.health.get(b.id)!.status === 'UP' &&
          after.health.get(b.id)!.checkedAt! > before.health.get(b.id)!.checkedAt!,
      );
    });
  });
});
