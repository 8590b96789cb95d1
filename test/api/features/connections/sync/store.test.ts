// SyncStore's behaviour, held the same for the MongoDB repository (on the embedded database) and for the in-memory
// fake the sync's unit tests use (docs/architecture.md, "Stores and fakes"): one sync per connection, changed as a
// versioned document and removed softly; due when its time has come or its run's claim lapsed, soonest first; a run
// claimed at the version read while no claim stands (a takeover counted), its progress written for its holder only,
// paused and resumed, finished at the version read with the outbox's change id.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { FakeSyncStore } from '../../../../../api/src/features/connections/sync/fake-store.js';
import {
  CONNECTION_SYNCS,
  NEVER,
  SyncRepository,
  type SyncFinish,
  type SyncRun,
  type SyncState,
  type SyncStore,
} from '../../../../../api/src/features/connections/sync/store.js';
import { describeStore } from '../../../../../testkit/store-behaviour.js';

const at = (second: number) => new Date(Date.UTC(2026, 10, 20, 10, 0, second));

type Connection = Pick<SyncState, 'connectionId' | 'accountId' | 'appUserId' | 'brandId'>;

function connection(overrides: Partial<Connection> = {}): Connection {
  return { connectionId: randomUUID(), accountId: randomUUID(), appUserId: 'user-1', brandId: 'brand-1', ...overrides };
}

/** A sync as scheduled. */
const scheduled = (c: Connection, nextAt: Date): SyncState => ({
  ...c,
  status: 'IDLE',
  lastSyncedAt: null,
  lastError: null,
  observations: 0,
  highWater: null,
  nextAt,
  run: null,
  version: 1,
});

/** A run as claimed afresh. */
const newRun = (holder: string, startedAt: Date, until: Date): SyncRun => ({
  holder,
  until,
  startedAt,
  next: null,
  added: 0,
  updated: 0,
  skipped: 0,
  foreignPatient: 0,
  highWater: null,
  takeovers: 0,
});

function finishing(overrides: Partial<SyncFinish> = {}): SyncFinish {
  return {
    status: 'IDLE',
    lastSkipped: 2,
    lastForeignPatient: 1,
    lastError: null,
    lastSyncedAt: at(50),
    highWater: '2026-11-20T09:55:00.000Z',
    addObservations: 7,
    nextAt: at(3600),
    ...overrides,
  };
}

describeStore<SyncStore>(
  'connections: sync stores',
  {
    mongo: {
      name: 'SyncRepository (MongoDB)',
      open: async ({ db, locks }) => {
        const repository = new SyncRepository(db, locks);
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakeSyncStore', open: async () => new FakeSyncStore() },
  },
  ({ store, database, it, mongoOnly }) => {
    /** Schedules a sync at `nextAt` and claims its run for `holder` from `now` until `until`; the state after. */
    const claimed = async (c: Connection, holder: string, now: Date, until: Date): Promise<SyncState> => {
      await store().schedule(c, now);
      return (await store().claim((await store().get(c.connectionId))!, holder, now, until))!;
    };
    /** The syncs among `connections` due at `now`, by id (the suite's database holds other cases' syncs). */
    const dueAmong = async (now: Date, ...connections: Connection[]): Promise<string[]> => {
      const ids = new Set(connections.map((c) => c.connectionId));
      return (await store().due(now, 0)).map((s) => s.connectionId).filter((id) => ids.has(id));
    };

    it('names where a change to the sync is recorded: its one document', async () => {
      expect(store().target('connection-1', 4)).to.deep.equal({
        collection: CONNECTION_SYNCS,
        id: 'connection-1',
        version: 4,
      });
    });

    it('knows no sync never scheduled; schedules one due at the time given, IDLE at version 1, never run', async () => {
      expect(await store().get(randomUUID())).to.equal(null);
      const c = connection();
      await store().schedule(c, at(60));
      expect(await store().get(c.connectionId)).to.deep.equal(scheduled(c, at(60)));
    });

    it('makes a sync scheduled again (a reconnect) due at the new time, at the next version, keeping the rest', async () => {
      const c = connection();
      const run = await claimed(c, 'replica-a', at(1), at(31));
      await store().finish(c.connectionId, run.version, finishing(), at(40), randomUUID());
      const finished = (await store().get(c.connectionId))!;
      await store().schedule({ ...c, appUserId: 'user-2', brandId: 'brand-2' }, at(100));
      expect(await store().get(c.connectionId)).to.deep.equal({
        ...finished,
        nextAt: at(100),
        version: finished.version + 1,
      });
    });

    it('lists as due a sync not running whose time has come, and a run whose claim lapsed whatever its time', async () => {
      const [waiting, later, running, requested] = [connection(), connection(), connection(), connection()];
      await store().schedule(waiting, at(10));
      await store().schedule(later, at(30));
      await claimed(running, 'replica-a', at(5), at(20));
      await claimed(requested, 'replica-b', at(5), at(20));
      // Asked for again while it runs: due later, but its claim lapses first.
      await store().requestNow(requested.connectionId, at(100));
      const all = [waiting, later, running, requested];
      expect(await dueAmong(at(9), ...all), 'none yet').to.deep.equal([]);
      expect(await dueAmong(at(10), ...all), 'its very time').to.deep.equal([waiting.connectionId]);
      expect(await dueAmong(at(20), ...all), 'claims standing to their very end').to.deep.equal([waiting.connectionId]);
      expect(await dueAmong(at(21), ...all), 'claims lapsed').to.have.members([
        waiting.connectionId,
        running.connectionId,
        requested.connectionId,
      ]);
      const [lapsed] = (await store().due(at(21), 0)).filter((s) => s.connectionId === running.connectionId);
      expect(lapsed).to.deep.equal(await store().get(running.connectionId));
    });

    it('lists no paused sync and no removed one as due', async () => {
      const [paused, removed, removedRunning] = [connection(), connection(), connection()];
      await claimed(paused, 'replica-a', at(1), at(31));
      await store().pause(paused.connectionId, 'replica-a', at(2));
      await store().schedule(removed, at(1));
      await store().remove(removed.connectionId, at(2));
      await claimed(removedRunning, 'replica-b', at(1), at(31));
      await store().remove(removedRunning.connectionId, at(2));
      expect(await dueAmong(new Date('9000-01-01T00:00:00Z'), paused, removed, removedRunning)).to.deep.equal([]);
    });

    it('lists the due syncs soonest first, up to the limit (0: all)', async () => {
      // Due long before every other case's syncs, which are then not due yet.
      const early = (day: number) => new Date(Date.UTC(1990, 0, day));
      const [third, first, fourth, second] = [connection(), connection(), connection(), connection()];
      await store().schedule(third, early(3));
      await store().schedule(first, early(1));
      // A lapsed run is listed at its time, not at its claim's end.
      await claimed(fourth, 'replica-a', early(4), early(5));
      await store().schedule(second, early(2));
      await store().schedule(connection(), early(20)); // not due
      const ids = (states: SyncState[]) => states.map((s) => s.connectionId);
      const order = [first, second, third, fourth].map((c) => c.connectionId);
      expect(ids(await store().due(early(10), 2))).to.deep.equal(order.slice(0, 2));
      expect(ids(await store().due(early(10), 10))).to.deep.equal(order);
      expect(ids(await store().due(early(10), 0))).to.deep.equal(order);
      expect(ids(await store().due(early(3), 10))).to.deep.equal(order.slice(0, 3));
    });

    it('claims a sync at the version read while no run stands: a new run, RUNNING, started now', async () => {
      const c = connection();
      await store().schedule(c, at(0));
      const read = (await store().get(c.connectionId))!;
      const claim = await store().claim(read, 'replica-a', at(1), at(31));
      const expected: SyncState = {
        ...read,
        status: 'RUNNING',
        run: newRun('replica-a', at(1), at(31)),
        lastStartedAt: at(1),
        version: 2,
      };
      expect(claim).to.deep.equal(expected);
      expect(await store().get(c.connectionId)).to.deep.equal(expected);
      expect(await store().claim(read, 'replica-b', at(40), at(70)), 'the version read before').to.equal(null);
      expect(await store().claim(claim!, 'replica-b', at(2), at(32)), 'while its claim stands').to.equal(null);
      expect(await store().claim(claim!, 'replica-b', at(31), at(61)), 'at its very end').to.equal(null);
      expect(await store().get(c.connectionId)).to.deep.equal(expected);
      const never = { ...read, connectionId: randomUUID() };
      expect(await store().claim(never, 'replica-b', at(2), at(32)), 'never scheduled').to.equal(null);
    });

    it('makes the next run a full one when asked, and only that run', async () => {
      const c = connection();
      await store().schedule(c, at(0));
      const asked = (await store().requestNow(c.connectionId, at(1), true))!;
      expect(asked.fullRequested).to.equal(true);
      // A request without `full` meanwhile does not undo it.
      const again = (await store().requestNow(c.connectionId, at(2)))!;
      expect(again.fullRequested).to.equal(true);
      const claim = (await store().claim(again, 'replica-a', at(3), at(33)))!;
      expect(claim.run!.full).to.equal(true);
      expect(claim.fullRequested).to.equal(false);
      const lapsed = (await store().claim(claim, 'replica-b', at(40), at(70)))!;
      expect(lapsed.run!.full, 'a takeover goes on with the full run').to.equal(true);
      // Paused (its app suspended), the full run is asked for again: the run after the pause is one.
      expect(await store().pause(c.connectionId, 'replica-b', at(41), true)).to.equal(true);
      const paused = (await store().get(c.connectionId))!;
      expect([paused.run, paused.fullRequested]).to.deep.equal([null, true]);
      await store().resume(c.connectionId, at(42));
      const resumed = (await store().claim((await store().get(c.connectionId))!, 'replica-c', at(43), at(73)))!;
      expect(resumed.run!.full).to.equal(true);
    });

    it('takes a run whose claim lapsed over where it stopped, counting the takeover, at the version read only', async () => {
      const c = connection();
      const first = await claimed(c, 'replica-a', at(1), at(31));
      const progressed: SyncRun = {
        ...first.run!,
        until: at(40),
        next: 'https://fhir.example.org/r4/Observation?page=2',
        added: 100,
        updated: 2,
        skipped: 1,
        foreignPatient: 3,
        highWater: '2026-11-20T09:55:00.000Z',
      };
      await store().progress(c.connectionId, progressed);
      const read = (await store().get(c.connectionId))!;
      const taken = await store().claim(read, 'replica-b', at(41), at(71));
      const expected = {
        ...read,
        run: { ...progressed, holder: 'replica-b', until: at(71), takeovers: 1 },
        lastStartedAt: at(1),
        version: read.version + 1,
      };
      expect(taken).to.deep.equal(expected);
      expect(await store().claim(read, 'replica-c', at(80), at(110)), 'the version read before').to.equal(null);
      expect(await store().progress(c.connectionId, progressed), 'its first holder').to.equal(false);
      expect(await store().pause(c.connectionId, 'replica-a', at(42)), 'its first holder').to.equal(false);
      expect(await store().get(c.connectionId)).to.deep.equal(expected);
      const again = await store().claim(taken!, 'replica-c', at(72), at(102));
      expect(again?.run).to.deep.equal({ ...progressed, holder: 'replica-c', until: at(102), takeovers: 2 });
    });

    mongoOnly(
      'takes over a run an older release wrote (no takeovers, no foreignPatient), counting from 0',
      'a document an older release wrote',
      async () => {
        const c = connection();
        const { connectionId, ...rest } = c;
        const run = { holder: 'replica-a', until: at(31), startedAt: at(1), next: null, added: 5, updated: 0 };
        const older = { ...run, skipped: 0, highWater: null };
        await database()
          .db.collection(CONNECTION_SYNCS)
          .insertOne({
            _id: connectionId as never,
            _version: 2,
            ...rest,
            status: 'RUNNING',
            lastSyncedAt: null,
            lastError: null,
            observations: 0,
            highWater: null,
            nextAt: at(0),
            run: older,
            updatedAt: at(1),
            deletedAt: null,
          });
        const read = (await store().get(connectionId))!;
        const taken = await store().claim(read, 'replica-b', at(32), at(62));
        expect(taken?.run).to.deep.equal({ ...older, holder: 'replica-b', until: at(62), takeovers: 1 });
      },
    );

    it('writes a run’s progress for its holder only, extending its claim without a new version', async () => {
      const c = connection();
      expect(await store().progress(c.connectionId, newRun('replica-a', at(1), at(31))), 'no sync').to.equal(false);
      await store().schedule(c, at(0));
      expect(await store().progress(c.connectionId, newRun('replica-a', at(1), at(31))), 'no run').to.equal(false);
      const claim = (await store().claim((await store().get(c.connectionId))!, 'replica-a', at(1), at(31)))!;
      const extended: SyncRun = { ...claim.run!, until: at(60), added: 5, next: 'https://fhir.example.org/r4/p2' };
      expect(await store().progress(c.connectionId, { ...extended, holder: 'replica-b' }), 'another').to.equal(false);
      expect(await store().get(c.connectionId)).to.deep.equal(claim);
      expect(await store().progress(c.connectionId, extended)).to.equal(true);
      expect(await store().get(c.connectionId)).to.deep.equal({ ...claim, run: extended });
      expect(await dueAmong(at(40), c), 'its claim extended').to.deep.equal([]);
      expect(await store().claim(claim, 'replica-b', at(40), at(70))).to.equal(null);
      // Its holder's still after it lapsed, while nobody took it over.
      const late = { ...extended, until: at(100), added: 6 };
      expect(await store().progress(c.connectionId, late)).to.equal(true);
      expect(await store().get(c.connectionId)).to.deep.equal({ ...claim, run: late });
      const finished = await store().finish(c.connectionId, claim.version, finishing(), at(90), randomUUID());
      expect(await store().progress(c.connectionId, late), 'finished').to.equal(false);
      expect(await store().get(c.connectionId)).to.deep.equal(finished);
    });

    it('still takes a removed sync’s progress from its holder (the write looks at the holder only)', async () => {
      const c = connection();
      const claim = await claimed(c, 'replica-a', at(1), at(31));
      await store().remove(c.connectionId, at(2));
      expect(await store().progress(c.connectionId, { ...claim.run!, until: at(60) })).to.equal(true);
      expect(await store().get(c.connectionId)).to.equal(null);
      expect(await store().progress(c.connectionId, { ...claim.run!, holder: 'replica-b' })).to.equal(false);
    });

    it("pauses its holder's run: IDLE, no run, due never, paused since the time given; nobody else's", async () => {
      const c = connection();
      await store().schedule(c, at(0));
      expect(await store().pause(c.connectionId, 'replica-a', at(1)), 'no run').to.equal(false);
      const claim = (await store().claim((await store().get(c.connectionId))!, 'replica-a', at(1), at(31)))!;
      expect(await store().pause(c.connectionId, 'replica-b', at(2)), 'another holder').to.equal(false);
      expect(await store().get(c.connectionId)).to.deep.equal(claim);
      expect(await store().pause(c.connectionId, 'replica-a', at(2))).to.equal(true);
      const paused = {
        ...claim,
        status: 'IDLE',
        run: null,
        nextAt: NEVER,
        pausedAt: at(2),
        version: claim.version + 1,
      };
      expect(await store().get(c.connectionId)).to.deep.equal(paused);
      expect(await store().pause(c.connectionId, 'replica-a', at(3)), 'twice').to.equal(false);
      expect(await store().pause(randomUUID(), 'replica-a', at(3)), 'never scheduled').to.equal(false);
    });

    it('resumes a paused sync, due at the time given; leaves one not paused as it is', async () => {
      const [paused, running] = [connection(), connection()];
      await claimed(paused, 'replica-a', at(1), at(31));
      await store().pause(paused.connectionId, 'replica-a', at(2));
      const claim = await claimed(running, 'replica-b', at(1), at(31));
      await store().resume(running.connectionId, at(3));
      expect(await store().get(running.connectionId), 'never paused').to.deep.equal(claim);
      const before = (await store().get(paused.connectionId))!;
      await store().resume(paused.connectionId, at(3));
      const resumed = { ...before, pausedAt: null, nextAt: at(3), version: before.version + 1 };
      expect(await store().get(paused.connectionId)).to.deep.equal(resumed);
      await store().resume(paused.connectionId, at(4));
      expect(await store().get(paused.connectionId), 'resumed already').to.deep.equal(resumed);
      expect(await dueAmong(at(3), paused)).to.deep.equal([paused.connectionId]);
      await store().resume(randomUUID(), at(4));
    });

    it("resumes the account's paused syncs, and only those", async () => {
      const account = randomUUID();
      const [mine, alsoMine, notPaused, theirs] = [
        connection({ accountId: account }),
        connection({ accountId: account }),
        connection({ accountId: account }),
        connection(),
      ];
      for (const c of [mine, alsoMine, theirs]) {
        await claimed(c, 'replica-a', at(1), at(31));
        await store().pause(c.connectionId, 'replica-a', at(2));
      }
      await store().schedule(notPaused, at(0));
      const before = await Promise.all([mine, alsoMine, notPaused, theirs].map((c) => store().get(c.connectionId)));
      await store().resumeAccount(account, at(5));
      const after = await Promise.all([mine, alsoMine, notPaused, theirs].map((c) => store().get(c.connectionId)));
      const resumed = (s: SyncState | null) => ({ ...s!, pausedAt: null, nextAt: at(5), version: s!.version + 1 });
      expect(after).to.deep.equal([resumed(before[0]!), resumed(before[1]!), before[2], before[3]]);
      await store().resumeAccount(randomUUID(), at(6));
    });

    it('finishes at the version read: its outcome, no run, the observations added, its next time', async () => {
      const c = connection();
      const claim = await claimed(c, 'replica-a', at(1), at(31));
      expect(await store().finish(c.connectionId, 1, finishing(), at(40), randomUUID()), 'stale').to.equal(null);
      expect(await store().get(c.connectionId)).to.deep.equal(claim);
      const done = await store().finish(c.connectionId, claim.version, finishing(), at(40), randomUUID());
      const expected: SyncState = {
        ...claim,
        status: 'IDLE',
        lastSkipped: 2,
        lastForeignPatient: 1,
        lastError: null,
        lastSyncedAt: at(50),
        highWater: '2026-11-20T09:55:00.000Z',
        nextAt: at(3600),
        run: null,
        observations: 7,
        version: claim.version + 1,
      };
      expect(done).to.deep.equal(expected);
      expect(await store().get(c.connectionId)).to.deep.equal(expected);
      // A failed run: its error, and the last sync's date as it was; the observations it stored still count.
      const failed = finishing({ status: 'FAILED', lastError: 'invalid_response', addObservations: 3 });
      delete failed.lastSyncedAt;
      const after = await store().finish(c.connectionId, expected.version, failed, at(60), randomUUID());
      expect(after).to.deep.include({
        status: 'FAILED',
        lastError: 'invalid_response',
        lastSyncedAt: at(50),
        observations: 10,
        version: expected.version + 1,
      });
      expect(await store().finish(randomUUID(), 1, finishing(), at(60), randomUUID()), 'never scheduled').to.equal(
        null,
      );
    });

    it('answers a finish repeated with its change id with the sync as it is now, adding nothing twice', async () => {
      const c = connection();
      const claim = await claimed(c, 'replica-a', at(1), at(31));
      const changeId = randomUUID();
      const done = await store().finish(c.connectionId, claim.version, finishing(), at(40), changeId);
      expect(await store().finish(c.connectionId, claim.version, finishing(), at(40), changeId)).to.deep.equal(done);
      expect(
        await store().finish(c.connectionId, claim.version, finishing(), at(40), randomUUID()),
        'another change at that version',
      ).to.equal(null);
      const later = await store().requestNow(c.connectionId, at(41));
      expect(
        await store().finish(c.connectionId, claim.version, finishing(), at(40), changeId),
        'after a later change',
      ).to.deep.equal(later);
      expect(later).to.deep.include({ observations: 7, version: claim.version + 2 });
    });

    it('makes a sync due on demand at the time given, at the next version, running or not', async () => {
      const [idle, running] = [connection(), connection()];
      expect(await store().requestNow(idle.connectionId, at(5)), 'never scheduled').to.equal(null);
      await store().schedule(idle, at(100));
      const made = await store().requestNow(idle.connectionId, at(5));
      expect(made).to.deep.equal({ ...scheduled(idle, at(5)), version: 2 });
      expect(await store().get(idle.connectionId)).to.deep.equal(made);
      const claim = await claimed(running, 'replica-a', at(1), at(31));
      expect(await store().requestNow(running.connectionId, at(6))).to.deep.equal({
        ...claim,
        nextAt: at(6),
        version: claim.version + 1,
      });
    });

    it('removes a sync: gone from every read, and it takes no further change, not even a schedule', async () => {
      const c = connection();
      const claim = await claimed(c, 'replica-a', at(1), at(31));
      await store().remove(c.connectionId, at(2));
      expect(await store().get(c.connectionId)).to.equal(null);
      expect(await store().requestNow(c.connectionId, at(3))).to.equal(null);
      await store().schedule(c, at(3));
      expect(await store().get(c.connectionId), 'scheduled again').to.equal(null);
      expect(await store().claim(claim, 'replica-b', at(40), at(70))).to.equal(null);
      expect(await store().pause(c.connectionId, 'replica-a', at(3))).to.equal(false);
      expect(await store().finish(c.connectionId, claim.version, finishing(), at(3), randomUUID())).to.equal(null);
      await store().resume(c.connectionId, at(3));
      await store().remove(c.connectionId, at(4));
      await store().remove(randomUUID(), at(4));
      expect(await store().get(c.connectionId)).to.equal(null);
    });

    it('keeps what it stores apart from what callers hold: changing either changes nothing stored', async () => {
      const c = connection();
      const claim = await claimed(c, 'replica-a', at(1), at(31));
      const expected = structuredClone(claim);
      claim.run!.added = 99;
      claim.nextAt.setTime(0);
      const read = (await store().get(c.connectionId))!;
      read.run!.next = 'changed';
      const [due] = (await store().due(at(40), 0)).filter((s) => s.connectionId === c.connectionId);
      due!.run!.holder = 'changed';
      expect(await store().get(c.connectionId)).to.deep.equal(expected);
      const run = { ...expected.run!, until: at(60), added: 1 };
      await store().progress(c.connectionId, run);
      run.added = 99;
      run.until.setTime(0);
      expect((await store().get(c.connectionId))!.run).to.deep.include({ added: 1, until: at(60) });
    });
  },
);
