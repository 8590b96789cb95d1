// The end of a sync run (api/src/features/connections/sync/finish.ts): its event and state, for a full run above all
// (what it removed, a full run asked for again when it failed for a passing reason, counts that never go below none).
import { expect } from 'chai';
import { ManualClock } from '../../../../../testkit/clock.js';
import { FakeOutbox } from '../../../../../api/src/features/events/fake-outbox.js';
import { FakeSyncStore } from '../../../../../api/src/features/connections/sync/fake-store.js';
import { finishRun } from '../../../../../api/src/features/connections/sync/finish.js';
import type { SyncRun, SyncState } from '../../../../../api/src/features/connections/sync/store.js';

const NOW = new Date('2026-03-01T12:00:00.000Z');

describe('connections: the end of a sync run', () => {
  let clock: ManualClock;
  let store: FakeSyncStore;
  let outbox: FakeOutbox;
  const connection = { connectionId: 'c-1', accountId: 'a-1', appUserId: 'u-1', brandId: 'b-1' };

  /** A claimed full run that added and removed as given, at the state's first version. */
  async function fullRun(types: SyncRun['types']): Promise<{ claimed: SyncState; run: SyncRun }> {
    await store.schedule(connection, NOW);
    await store.requestNow(connection.connectionId, NOW, true);
    const claimed = (await store.claim((await store.get('c-1'))!, 'replica-a', NOW, new Date(NOW.getTime() + 30_000)))!;
    const run: SyncRun = { ...claimed.run!, types, added: 0, updated: 0 };
    for (const t of Object.values(types ?? {}))
      Object.assign(run, { added: run.added + t.added, updated: run.updated + t.updated });
    return { claimed, run };
  }

  beforeEach(() => {
    clock = new ManualClock(NOW);
    store = new FakeSyncStore();
    outbox = new FakeOutbox(clock);
  });
  const deps = () => ({ store, outbox, clock, intervalMs: 3_600_000 });

  it('says what a full run removed, in all and by type, and lowers the counts by as much', async () => {
    const { claimed, run } = await fullRun({
      Condition: { added: 3, updated: 0, invalid: 0, foreignPatient: 0, removed: 1 },
      Observation: { added: 0, updated: 2, invalid: 0, foreignPatient: 0, removed: 2 },
    });
    expect(run.full).to.equal(true);
    await finishRun(deps(), claimed, run, null);
    const event = outbox.committed.at(-1)!;
    expect(event.type).to.equal('connection.synced');
    expect(event.data).to.deep.include({ added: 3, updated: 2, removed: 3 });
    expect((event.data as { counts: unknown }).counts).to.deep.equal({
      Condition: { added: 3, updated: 0, removed: 1 },
      Observation: { added: 0, updated: 2, removed: 2 },
    });
    const state = (await store.get('c-1'))!;
    expect(state.types!.Condition!.count).to.equal(2);
    // Two observations removed that no sync had added (the account ingested them): never below none.
    expect([state.types!.Observation!.count, state.observations]).to.deep.equal([0, 0]);
    expect(state.fullRequested).to.equal(false);
  });

  it('asks for the full run again when it failed for a passing reason, not for one that would fail again', async () => {
    const failed = async (reason: string) => {
      store = new FakeSyncStore();
      const { claimed, run } = await fullRun({});
      await finishRun(deps(), claimed, run, reason);
      return (await store.get('c-1'))!.fullRequested === true;
    };
    expect(await failed('unavailable')).to.equal(true);
    expect(await failed('http_503')).to.equal(true);
    expect(await failed('internal_error')).to.equal(true);
    expect(await failed('next_link_refused')).to.equal(false);
    expect(await failed('takeover_limit')).to.equal(false);
  });
});
