// What bounds a sync (docs/connecting.md, "Sync limits"), against the sandbox EHR: resources of several MiB are
// stored in small batches and one over 1 MiB is skipped; a run whose replicas keep dying ends after three takeovers
// without progress; the next run reads from the server's own clock, so a record dated in the future stops nothing;
// asking for a sync within a minute of the last one is 429; and a suspended app's or account's connections are not
// synced until reactivated.
import { expect } from 'chai';
import { BATCH_BYTES } from '../../../../../api/src/features/connections/sync/batch-writer.js';
import { ShiftedClock } from '../../../../../testkit/clock.js';
import { connectThroughBrowser, startSmartWorld, until, type SmartWorld } from '../../../../../testkit/smart.js';

const MiB = 1024 * 1024;
/** The sandbox's clock: two hours behind Portico's, so that whose clock a high-water mark comes from shows. */
const SANDBOX_LAG_MS = 2 * 3_600_000;

describe('sync limits (sandbox EHR)', function () {
  this.timeout(120_000);
  let world: SmartWorld;
  const clock = new ShiftedClock();
  before(async () => {
    world = await startSmartWorld({
      clock,
      now: () => Date.now() - SANDBOX_LAG_MS,
      env: { PORTICO_SYNC_INTERVAL: '1000h' },
    });
  });
  after(() => world?.close());

  const appUser = (id: string) =>
    world.api.request('GET', `/api/platform/v1/app-users/${id}`, { key: world.tenant.key });
  const syncNow = (connectionId: string) =>
    world.api.request('POST', `/api/platform/v1/connections/${connectionId}/sync`, { key: world.tenant.key });
  const settled = (appUserId: string, since: string | null) =>
    until(
      `a sync of ${appUserId}`,
      () => appUser(appUserId),
      (res) => {
        const sync = res.body.connections[0]?.sync;
        return sync?.status === 'FAILED' || (sync?.status === 'IDLE' && ![null, since].includes(sync.lastSyncedAt));
      },
    ).then((res) => res.body.connections[0]);
  const connect = async (appUserId: string, username = 'ada') => {
    const { back } = await connectThroughBrowser(world, 'public-v2', appUserId, { username });
    const connectionId = back.searchParams.get('connectionId')!;
    return { connectionId, first: await settled(appUserId, null) };
  };
  const syncState = (connectionId: string) =>
    world.api.mongo.db.collection<Record<string, any>>('connection_syncs').findOne({ _id: connectionId as never });

  it('stores resources of several MiB in small batches, and skips one over 1 MiB as invalid', async () => {
    world.ehr.switches.padObservations = { bytes: 900 * 1024 };
    try {
      // Grace's 40 records of 900 KiB each: 36 MiB, stored a few at a time.
      const { connectionId, first } = await connect('limits-big', 'grace');
      expect(first.sync).to.include({ lastError: null, observations: 40, skipped: 0 });
      // Three of them a bundle (a batch stays within BATCH_BYTES): fourteen bundles, not one of 36 MiB (and the
      // patient's own, read first).
      const head = await world.api.mongo.db
        .collection<{ _id: string; _version: number }>('observation_heads')
        .findOne({ _id: connectionId });
      expect(head?._version).to.equal(1 + Math.ceil(40 / Math.floor(BATCH_BYTES / (900 * 1024))));
      // Then every 20th is over the 1 MiB a resource may have: the 20th, changed, is skipped; the 21st is not.
      world.ehr.switches.padObservations = { bytes: MiB + 1, every: 20 };
      world.ehr.touchObservation('public-v2', 'grace', 19);
      world.ehr.touchObservation('public-v2', 'grace', 20);
      clock.advance(61_000);
      expect((await syncNow(connectionId)).status).to.equal(202);
      const second = await settled('limits-big', first.sync.lastSyncedAt);
      expect(second.sync).to.include({ lastError: null, skipped: 1 });
      // What the gateway serves: all 40, the 20th as first stored (its change was skipped), the 21st changed.
      const read = (id: string) =>
        world.api.request('GET', `/api/sdk/v1/fhir/connections/${connectionId}/Observation/${id}`, {
          key: world.app.ak,
        });
      const [twentieth, twentyFirst] = [await read('grace-obs-0000019'), await read('grace-obs-0000020')];
      expect([twentieth.body.meta.versionId, twentieth.text.length]).to.deep.equal(['1', 900 * 1024]);
      expect(twentyFirst.body.meta.versionId).to.equal('2');
      expect(twentyFirst.text.length).to.be.below(1024);
      const search = await world.api.request(
        'GET',
        `/api/sdk/v1/fhir/connections/${connectionId}/Observation?_count=1`,
        {
          key: world.app.ak,
        },
      );
      expect(search.body.total).to.equal(40);
    } finally {
      world.ehr.switches.padObservations = null;
    }
  });

  it("reads again from the server's clock less five minutes, so a record dated in the future stops nothing", async () => {
    world.ehr.switches.lastUpdatedOffsetMs = 365 * 24 * 3_600_000;
    let connectionId: string;
    let first: any;
    try {
      ({ connectionId, first } = await connect('limits-future', 'grace'));
    } finally {
      world.ehr.switches.lastUpdatedOffsetMs = 0;
    }
    const serverNow = Date.now() - SANDBOX_LAG_MS;
    const mark = Date.parse((await syncState(connectionId))!['highWater']);
    expect(serverNow - mark).to.be.within(5 * 60_000, 6 * 60_000); // the server's own clock, not Portico's
    world.ehr.addObservations('public-v2', 'grace', 3);
    clock.advance(61_000);
    await syncNow(connectionId);
    const second = await settled('limits-future', first.sync.lastSyncedAt);
    expect(second.sync.observations).to.equal(43);
    // The same without the Bundle's own time: its Date header.
    world.ehr.switches.bundleLastUpdated = false;
    try {
      clock.advance(61_000);
      await syncNow(connectionId);
      await settled('limits-future', second.sync.lastSyncedAt);
      const byDate = Date.parse((await syncState(connectionId))!['highWater']);
      expect(Date.now() - SANDBOX_LAG_MS - byDate).to.be.within(5 * 60_000 - 1_000, 6 * 60_000);
    } finally {
      world.ehr.switches.bundleLastUpdated = true;
    }
  });

  it('answers 429 to a sync asked for within a minute of the last one', async () => {
    const { connectionId } = await connect('limits-throttle', 'grace');
    const soon = await syncNow(connectionId);
    expect(soon.status).to.equal(429);
    expect(soon.body.code).to.equal('RATE_LIMITED');
    expect(Number(soon.headers.get('retry-after'))).to.be.within(1, 60);
    clock.advance(Number(soon.headers.get('retry-after')) * 1000);
    expect((await syncNow(connectionId)).status).to.equal(202);
  });

  it('ends a run FAILED (takeover_limit) once it was taken over three times without progress', async () => {
    const { connectionId, first } = await connect('limits-takeover', 'grace');
    const { syncStore, syncRunner } = world.api.services.connections;
    await syncRunner.stop();
    try {
      clock.advance(61_000);
      await syncStore.requestNow(connectionId, clock.now());
      // Three replicas claim the run in turn and die at once (their claims lapse, nothing stored).
      for (const replica of ['dies-1', 'dies-2', 'dies-3']) {
        const [due] = (await syncStore.due(clock.now(), 100)).filter((s) => s.connectionId === connectionId);
        expect(due, replica).to.not.equal(undefined);
        expect(await syncStore.claim(due!, replica, clock.now(), clock.now())).to.not.equal(null);
        clock.advance(1);
      }
      expect((await syncStore.get(connectionId))?.run?.takeovers).to.equal(2);
    } finally {
      syncRunner.start(); // the third takeover: it ends the run
    }
    const failed = await settled('limits-takeover', first.sync.lastSyncedAt);
    expect(failed.sync).to.include({ status: 'FAILED', lastError: 'takeover_limit' });
    // The next sync starts afresh.
    clock.advance(61_000);
    await syncNow(connectionId);
    const afresh = await until(
      'a sync after the failed one',
      () => appUser('limits-takeover'),
      (res) => res.body.connections[0]?.sync?.status === 'IDLE',
    );
    expect(afresh.body.connections[0].sync.lastError).to.equal(null);
  });

  for (const who of ['app', 'account'] as const) {
    it(`syncs nothing, and refreshes nothing, for a suspended ${who}'s connections until reactivated`, async () => {
      const { connectionId, first } = await connect(`limits-suspended-${who}`, 'grace');
      const path = who === 'app' ? `/apps/${world.app.appId}` : `/customer-accounts/${world.tenant.accountId}`;
      const { syncStore, syncRunner } = world.api.services.connections;
      expect((await world.api.admin('PATCH', path, { status: 'SUSPENDED' })).status).to.equal(200);
      let paused: Record<string, unknown> | null = null;
      try {
        if (who === 'app') expect((await syncNow(connectionId)).status, 'asking is refused').to.equal(409);
        world.ehr.switches.expireAccessTokens();
        const [requests, refreshes] = [world.ehr.stats.fhirRequests, world.ehr.stats.tokenRequests.refresh_token];
        clock.advance(61_000);
        await syncStore.requestNow(connectionId, clock.now()); // due, as the schedule would make it
        syncRunner.wake();
        paused = await until(
          'the sync to pause',
          () => syncState(connectionId),
          (s) => s?.['pausedAt'] != null && s['run'] === null,
        );
        expect([world.ehr.stats.fhirRequests, world.ehr.stats.tokenRequests.refresh_token]).to.deep.equal([
          requests,
          refreshes,
        ]);
      } finally {
        expect((await world.api.admin('PATCH', path, { status: 'ACTIVE' })).status).to.equal(200);
      }
      expect(paused?.['status']).to.equal('IDLE');
      const resumed = await settled(`limits-suspended-${who}`, first.sync.lastSyncedAt);
      expect(resumed.sync.lastError).to.equal(null);
    });
  }
});
