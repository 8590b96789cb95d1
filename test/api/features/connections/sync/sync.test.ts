// Keeping a connection's records in sync with its health system, against the sandbox EHR (docs/connecting.md,
// "Sync"): incremental reads, invalid records skipped, Retry-After, next links off the server's origin refused, a
// sync taken over when its replica dies, and what `POST /connections/{id}/sync` answers.
import { expect } from 'chai';
import { policyFetch, type PolicyFetch } from '#core/net/policy-fetch.js';
import { SyncService } from '../../../../../api/src/features/connections/sync/service.js';
import { connectionOf } from '../../../../../testkit/apps.js';
import { ShiftedClock } from '../../../../../testkit/clock.js';
import { eventsOf } from '../../../../../testkit/events.js';
import { connectThroughBrowser, startSmartWorld, until, type SmartWorld } from '../../../../../testkit/smart.js';

describe('syncing a connection from its health system (sandbox EHR)', function () {
  this.timeout(90_000);
  let world: SmartWorld;
  // Asking for a sync within a minute of the last one's start is refused: the test moves time on before each ask.
  const clock = new ShiftedClock();
  before(async () => {
    world = await startSmartWorld({ clock });
  });
  after(() => world?.close());

  const appUser = (id: string) =>
    world.api.request('GET', `/api/platform/v1/app-users/${id}`, { key: world.tenant.key });
  const syncNow = (connectionId: string) => {
    clock.advance(61_000);
    return world.api.request('POST', `/api/platform/v1/connections/${connectionId}/sync`, { key: world.tenant.key });
  };
  const finished = async (appUserId: string, since: string | null, status = 'IDLE') =>
    (
      await until(
        `a sync ending ${status}`,
        () => appUser(appUserId),
        (res) => {
          const sync = res.body.connections[0]?.sync;
          return (
            sync?.status === status &&
            (status === 'FAILED' || (sync.lastSyncedAt !== null && sync.lastSyncedAt !== since))
          );
        },
      )
    ).body.connections[0];
  const connect = async (appUserId: string, username = 'ada') => {
    const { back } = await connectThroughBrowser(world, 'public-v2', appUserId, { username });
    const connectionId = back.searchParams.get('connectionId')!;
    const first = await finished(appUserId, null);
    return { connectionId, first };
  };
  const total = async (connectionId: string) =>
    (
      await world.api.request('GET', `/api/sdk/v1/fhir/connections/${connectionId}/Observation?_count=1`, {
        key: world.app.ak,
      })
    ).body.total as number;
  const syncEvents = async (connectionId: string) =>
    (await eventsOf(world.api.mongo.db, world.tenant.accountId)).filter(
      (e) => e.type.startsWith('connection.sync') && (e.data as { connectionId: string }).connectionId === connectionId,
    );

  it('reads only what changed since the last sync, and says so in a thin event', async () => {
    const { connectionId, first } = await connect('sync-incremental', 'grace');
    expect(first.sync.observations).to.equal(40);
    world.ehr.addObservations('public-v2', 'grace', 3);
    world.ehr.touchObservation('public-v2', 'grace', 0);
    const accepted = await syncNow(connectionId);
    expect(accepted.status, accepted.text).to.equal(202);
    expect(accepted.body.connectionId).to.equal(connectionId);
    const second = await finished('sync-incremental', first.sync.lastSyncedAt);
    expect(second.sync.observations).to.equal(43);
    expect(await total(connectionId)).to.equal(43);
    const events = await syncEvents(connectionId);
    expect(events.map((e) => e.data)).to.deep.include({
      connectionId,
      appUserId: 'sync-incremental',
      brandId: world.brands['public-v2'],
      // The patient is read again each run (a read has no _lastUpdated): one update of its own.
      added: 3,
      updated: 2,
      counts: { Patient: { added: 0, updated: 1 }, Observation: { added: 3, updated: 1 } },
    });
  });

  it('skips and counts invalid records without failing the sync', async () => {
    world.ehr.switches.invalidEvery = 10;
    try {
      const { connectionId, first } = await connect('sync-invalid', 'grace');
      expect(first.sync.lastError).to.equal(null);
      expect(first.sync.observations).to.equal(await total(connectionId));
      expect(first.sync.observations).to.be.below(43);
    } finally {
      world.ehr.switches.invalidEvery = null;
    }
  });

  it("honours a 429's Retry-After and finishes", async () => {
    const { connectionId, first } = await connect('sync-429', 'grace');
    world.ehr.switches.failNext('fhir', 429, 1, 1);
    await syncNow(connectionId);
    const after = await finished('sync-429', first.sync.lastSyncedAt);
    expect(after.sync.lastError).to.equal(null);
  });

  it("refuses a next link off the FHIR server's origin: the sync fails with next_link_refused", async () => {
    world.ehr.switches.foreignNextOrigin = 'http://127.0.0.2:9';
    try {
      const { back } = await connectThroughBrowser(world, 'public-v2', 'sync-foreign');
      const connectionId = back.searchParams.get('connectionId')!;
      const failed = await finished('sync-foreign', null, 'FAILED');
      expect(failed.sync.lastError).to.equal('next_link_refused');
      const events = await syncEvents(connectionId);
      expect(events.map((e) => [e.type, e.data])).to.deep.include([
        'connection.sync_failed',
        { connectionId, appUserId: 'sync-foreign', brandId: world.brands['public-v2'], reason: 'next_link_refused' },
      ]);
    } finally {
      world.ehr.switches.foreignNextOrigin = null;
    }
  });

  it('takes over a sync whose replica died, finishing it once with nothing duplicated', async () => {
    const { connectionId, first } = await connect('sync-takeover');
    expect(first.sync.observations).to.equal(230);
    world.ehr.addObservations('public-v2', 'ada', 2_500); // 25 pages, stored 1,000 (10 pages) at a time
    const links = world.api.services.connections;
    await links.syncRunner.stop(); // this replica stops looking while the doomed one claims the run
    let die!: (error: Error) => void;
    const dead = new Promise<never>((_, reject) => (die = reject));
    dead.catch(() => {});
    const real = policyFetch({ allowInsecure: true, maxBytes: 32 * 1024 * 1024, stream: true });
    let pages = 0;
    // It reads the server's CapabilityStatement, the patient and 11 pages (the 11th while it stores the first 10),
    // then its process dies on the 12th.
    const dying: PolicyFetch = (url, init) => (++pages > 13 ? dead : real(url, init));
    const doomed = new SyncService({
      store: links.syncStore,
      connections: links.lifecycle,
      ingest: world.api.services.ingest,
      outbox: world.api.services.outbox,
      pages: { fetch: dying, vault: links.vault, pause: async () => {} },
      tokens: { forget: async () => {} },
      accounts: world.api.services.accounts,
      apps: world.api.services.apps,
      clock,
      intervalMs: 3_600_000,
      leaseMs: 300,
    });
    await links.syncStore.requestNow(connectionId, clock.now());
    const [due] = (await links.syncStore.due(clock.now(), 100)).filter((s) => s.connectionId === connectionId);
    const claimed = await links.syncStore.claim(
      due!,
      'doomed-replica',
      clock.now(),
      new Date(clock.now().getTime() + 300),
    );
    // A live run keeps its claim (it beats every leaseMs / 3); its process dying stops that: here, its stop signal.
    const alive = new AbortController();
    const running = doomed.run(claimed!, alive.signal);
    running.catch(() => {});
    await until(
      'the first ten pages stored',
      () => links.syncStore.get(connectionId),
      (s) => s?.run?.next != null,
    );
    alive.abort(); // the replica dies: its claim lapses 300 ms after its last beat
    links.syncRunner.start(); // the surviving replica: it takes the run over once the claim lapses
    const done = await finished('sync-takeover', first.sync.lastSyncedAt);
    die(new Error('the replica died'));
    expect(done.sync.observations).to.equal(2_730);
    expect(await total(connectionId)).to.equal(2_730);
    const synced = (await syncEvents(connectionId)).filter((e) => e.type === 'connection.synced');
    expect(synced).to.have.length(2); // the first sync's and this one's, once
    // (The first sync added the patient too.)
    expect(synced.map((e) => (e.data as { added: number }).added)).to.have.members([231, 2_500]);
  });

  it('answers 409 for a connection not made by signing in, 404 for one that is not the account’s', async () => {
    const other = await world.api.tenant();
    const { connectionId } = await connect('sync-404', 'grace');
    const foreign = await world.api.request('POST', `/api/platform/v1/connections/${connectionId}/sync`, {
      key: other.key,
    });
    expect(foreign.status).to.equal(404);
    const declared = await connectionOf(
      world.api,
      world.tenant,
      world.app,
      'sync-declared',
      world.brands['public-v2']!,
    );
    expect((await syncNow(declared)).status).to.equal(409);
  });
});
