// IdempotencyStore's behaviour, held the same for the MongoDB store (on the embedded database) and for the
// in-memory fake (docs/architecture.md, "Stores and fakes" and "Idempotency is exactly once across faults"): one
// claim wins, only the owner moves a claim on, every write to a claim counts (a take-over judged before it fails),
// expired records neither block a key nor stay forever. The MongoDB store alone is also held to what only its
// documents can show: records written by an older release, and writes that land after their request gave up.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { FakeIdempotencyStore } from '../../../../api/src/shared/http/fake-idempotency-store.js';
import {
  IDEMPOTENCY_RECORDS,
  MongoIdempotencyStore,
  type DoneRecord,
  type IdempotencyStore,
  type RunningRecord,
} from '../../../../api/src/shared/http/idempotency-store.js';
import { CHANGE_FIELD, CHANGE_RING } from '../../../../api/src/shared/infra/change-scope.js';
import { command, startDatabaseProxy } from '../../../../testkit/database-proxy.js';
import { mongoUri } from '../../../../testkit/services.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

const DAY = 24 * 3_600_000;
/** Why the cases of writes landing late are the MongoDB store's alone. */
const LATE =
  "a write that lands after its caller gave up is the embedded database's, held by a proxy; the fake's never do";

const running = (now: number, overrides: Partial<RunningRecord> = {}): RunningRecord => ({
  state: 'running',
  fingerprint: 'f',
  owner: randomUUID(),
  leaseUntil: now + 30_000,
  expiresAt: now + DAY,
  targets: [],
  ...overrides,
});
const done = (now: number, sealed = 's'): DoneRecord => ({
  state: 'done',
  fingerprint: 'f',
  sealed,
  expiresAt: now + DAY,
});
const point = { collection: 'patients', id: 'x', changeId: 'c', version: 1 };

describeStore<IdempotencyStore>(
  'http: idempotency stores',
  {
    mongo: {
      name: 'MongoIdempotencyStore (MongoDB)',
      open: async ({ db, locks }) => {
        const store = new MongoIdempotencyStore(db, locks);
        await store.init();
        return store;
      },
    },
    fake: { name: 'FakeIdempotencyStore', open: async () => new FakeIdempotencyStore() },
  },
  ({ store, database, it, mongoOnly }) => {
    it('lets exactly one of many concurrent claims win and shows the others the winner', async () => {
      const scope = randomUUID();
      const now = Date.now();
      const claims = Array.from({ length: 10 }, () => running(now));
      const results = await Promise.all(claims.map((c) => store().claim(scope, c, now)));
      const winners = results.filter((r) => r === null);
      expect(winners).to.have.length(1);
      const owner = claims[results.indexOf(null)]!.owner;
      for (const r of results.filter((r) => r !== null)) expect(r).to.include({ state: 'running', owner });
    });

    it('shows a live claim as it was claimed, with no revision yet', async () => {
      const now = Date.now();
      const scope = randomUUID();
      const first = running(now, { fingerprint: 'first', targets: [point] });
      expect(await store().claim(scope, first, now)).to.equal(null);
      expect(await store().claim(scope, running(now, { fingerprint: 'second' }), now)).to.deep.equal({
        ...first,
        revision: 0,
      });
    });

    it('moves a claim on only for its owner', async () => {
      const scope = randomUUID();
      const now = Date.now();
      const mine = running(now);
      await store().claim(scope, mine, now);
      expect(await store().addTarget(scope, 'someone else', point, now + 30_000)).to.equal(false);
      expect(await store().addTarget(scope, mine.owner, point, now + 60_000)).to.equal(true);
      const seen = await store().claim(scope, running(now), now);
      expect(seen).to.deep.include({ state: 'running', owner: mine.owner, leaseUntil: now + 60_000, targets: [point] });

      const next = running(now);
      const judged = seen as RunningRecord;
      expect(await store().takeOver(scope, { ...judged, owner: 'someone else' }, next)).to.equal(false);
      expect(await store().takeOver(scope, judged, next)).to.equal(true);
      expect(await store().complete(scope, mine.owner, done(now))).to.equal(false);
      await store().release(scope, mine.owner);
      expect(await store().complete(scope, next.owner, done(now))).to.equal(true);
      expect(await store().claim(scope, running(now), now)).to.deep.equal(done(now));
    });

    it("renews only the owner's lease, and every write to a claim counts in its revision", async () => {
      const now = Date.now();
      const scope = randomUUID();
      const mine = running(now);
      await store().claim(scope, mine, now);
      expect(await store().renew(scope, 'someone else', now + 90_000)).to.equal(false);
      expect(await store().renew(scope, mine.owner, now + 60_000)).to.equal(true);
      expect(await store().claim(scope, running(now), now)).to.include({
        owner: mine.owner,
        leaseUntil: now + 60_000,
        revision: 1,
      });
      expect(await store().addTarget(scope, mine.owner, point, now + 70_000)).to.equal(true);
      expect(await store().release(scope, mine.owner)).to.equal(true);
      expect(await store().claim(scope, running(now), now)).to.include({
        leaseUntil: now + 70_000,
        revision: 3,
        released: true,
      });
      expect(await store().renew(randomUUID(), mine.owner, now + 60_000), 'no such claim').to.equal(false);
    });

    it("keeps the recovery points across a take-over, and shows the claimant's fingerprint", async () => {
      const now = Date.now();
      const scope = randomUUID();
      const a = running(now - 60_000, { leaseUntil: now - 1 });
      await store().claim(scope, a, now - 60_000);
      await store().addTarget(scope, a.owner, point, now - 1);
      const judged = (await store().claim(scope, running(now), now)) as RunningRecord;
      const b = running(now, { fingerprint: 'retry' });
      expect(await store().takeOver(scope, judged, b)).to.equal(true);
      expect(await store().claim(scope, running(now), now)).to.deep.equal({ ...b, targets: [point], revision: 2 });
    });

    it('takes a claim over only as judged: not once a recovery point, renewal or hand-back came since', async () => {
      const now = Date.now();
      const scope = randomUUID();
      const a = running(now - 60_000, { leaseUntil: now - 1 });
      await store().claim(scope, a, now - 60_000);
      const judged = (await store().claim(scope, running(now), now)) as RunningRecord;
      // The same lease: only the revision tells this write.
      expect(await store().addTarget(scope, a.owner, point, now - 1)).to.equal(true);
      expect(await store().takeOver(scope, judged, running(now))).to.equal(false);
      const renewed = (await store().claim(scope, running(now), now)) as RunningRecord;
      expect(await store().renew(scope, a.owner, now - 1)).to.equal(true);
      expect(await store().takeOver(scope, renewed, running(now))).to.equal(false);
      const released = (await store().claim(scope, running(now), now)) as RunningRecord;
      expect(await store().release(scope, a.owner)).to.equal(true);
      expect(await store().takeOver(scope, released, running(now))).to.equal(false);
      const current = (await store().claim(scope, running(now), now)) as RunningRecord;
      const b = running(now);
      expect(await store().takeOver(scope, current, b)).to.equal(true);
      expect(await store().claim(scope, running(now), now)).to.include({ owner: b.owner });
    });

    it('moves a finished record no more: no take-over, recovery point, renewal, hand-back or outcome', async () => {
      const now = Date.now();
      const scope = randomUUID();
      const mine = running(now);
      await store().claim(scope, mine, now);
      const judged = (await store().claim(scope, running(now), now)) as RunningRecord;
      expect(await store().complete(scope, mine.owner, done(now, 'the outcome'))).to.equal(true);
      expect(await store().takeOver(scope, judged, running(now))).to.equal(false);
      expect(await store().addTarget(scope, mine.owner, point, now + 60_000)).to.equal(false);
      expect(await store().renew(scope, mine.owner, now + 60_000)).to.equal(false);
      expect(await store().release(scope, mine.owner)).to.equal(false);
      expect(await store().complete(scope, mine.owner, done(now, 'another'))).to.equal(false);
      expect(await store().claim(scope, running(now), now)).to.deep.equal(done(now, 'the outcome'));
    });

    it('hands a claim back by marking it released by its owner, only for its owner', async () => {
      const now = Date.now();
      const scope = randomUUID();
      const first = running(now);
      await store().claim(scope, first, now);
      expect(await store().release(scope, 'someone else')).to.equal(false);
      expect(await store().claim(scope, running(now), now)).to.include({
        owner: first.owner,
        leaseUntil: first.leaseUntil,
      });
      expect(await store().release(scope, first.owner)).to.equal(true);
      const judged = (await store().claim(scope, running(now), now)) as RunningRecord;
      expect(judged).to.include({ owner: first.owner, released: true });
      const next = running(now);
      expect(await store().takeOver(scope, judged, next)).to.equal(true);
      const taken = await store().claim(scope, running(now), now);
      expect(taken).to.include({ owner: next.owner });
      expect(taken).to.not.have.property('released');
      expect(await store().release(randomUUID(), first.owner), 'no such claim').to.equal(false);
    });

    it('treats an expired record, running or finished, as absent: the claim wins', async () => {
      const now = Date.now();
      const old = randomUUID();
      await store().claim(old, running(now - 2 * DAY, { expiresAt: now - DAY }), now - 2 * DAY);
      const mine = running(now);
      expect(await store().claim(old, mine, now)).to.equal(null);
      expect(await store().claim(old, running(now), now)).to.include({ owner: mine.owner });
      const finished = randomUUID();
      const first = running(now - 2 * DAY);
      await store().claim(finished, first, now - 2 * DAY);
      await store().complete(finished, first.owner, { ...done(now), expiresAt: now - 1 });
      expect(await store().claim(finished, running(now), now - 2)).to.deep.include({ state: 'done' });
      expect(await store().claim(finished, running(now), now)).to.equal(null);
    });

    it('sweeps at most `limit` expired records, keeping live ones', async () => {
      const now = Date.now();
      await store().sweep(now, 1_000); // what earlier cases left on the suite's database
      const expired = [randomUUID(), randomUUID(), randomUUID()];
      for (const scope of expired)
        await store().claim(scope, running(now - 2 * DAY, { expiresAt: now - 1 }), now - 2 * DAY);
      const live = randomUUID();
      const kept = running(now);
      await store().claim(live, kept, now);
      expect(await store().sweep(now, 2)).to.equal(2);
      expect(await store().sweep(now, 10)).to.equal(1);
      expect(await store().sweep(now, 10)).to.equal(0);
      // Swept: a claim at a time the records were still live finds none of them.
      for (const scope of expired)
        expect(await store().claim(scope, running(now - 2 * DAY), now - 2 * DAY)).to.equal(null);
      expect(await store().claim(live, running(now), now)).to.include({ owner: kept.owner });
    });

    it('does not take a change whose document is not there for one that happened', async () => {
      expect(
        await store().reached({ collection: 'patients', id: randomUUID(), changeId: randomUUID(), version: 1 }),
      ).to.equal(false);
      expect(
        await store().reached({
          collection: 'api_keys',
          id: randomUUID(),
          changeId: randomUUID(),
          field: CHANGE_FIELD,
        }),
      ).to.equal(false);
    });

    mongoOnly(
      "tells by its document whether a change happened: a plain write's mark, a versioned change's ring",
      "the fake reads no other store's documents; it answers what the predicate it was given says",
      async () => {
        const [plain, versioned, changeId] = [randomUUID(), randomUUID(), randomUUID()];
        await database()
          .db.collection('api_keys')
          .insertOne({ _id: plain as never, [CHANGE_FIELD]: changeId });
        await database()
          .db.collection('patients')
          .insertOne({ _id: versioned as never, _version: 2, _changes: { [String(2 % CHANGE_RING)]: changeId } });
        expect(await store().reached({ collection: 'api_keys', id: plain, changeId, field: CHANGE_FIELD })).to.equal(
          true,
        );
        expect(
          await store().reached({ collection: 'api_keys', id: plain, changeId: randomUUID(), field: CHANGE_FIELD }),
        ).to.equal(false);
        expect(await store().reached({ collection: 'patients', id: versioned, changeId, version: 2 })).to.equal(true);
        expect(
          await store().reached({ collection: 'patients', id: versioned, changeId, version: 3 }),
          'not that far',
        ).to.equal(false);
      },
    );

    mongoOnly(
      'treats an expired record as absent, and sweeps expired records away while keeping live ones',
      'it counts the documents left in idempotency_records',
      async () => {
        const now = Date.now();
        const old = randomUUID();
        await store().claim(old, running(now - 2 * DAY, { expiresAt: now - DAY }), now - 2 * DAY);
        expect(await store().claim(old, running(now), now)).to.equal(null); // the old one did not block the key

        const expired = randomUUID();
        const live = randomUUID();
        await store().claim(expired, running(now - 2 * DAY, { expiresAt: now - 1 }), now - 2 * DAY);
        await store().claim(live, running(now), now);
        expect(await store().sweep(now, 100)).to.be.at.least(1);
        const records = database().db.collection(IDEMPOTENCY_RECORDS);
        expect(await records.countDocuments({ _id: expired as never })).to.equal(0);
        expect(await records.countDocuments({ _id: live as never })).to.equal(1);
        expect(await records.countDocuments({ _id: old as never })).to.equal(1);
      },
    );

    mongoOnly(
      'takes a claim over only as it was judged: not once an older replica (no revisions) renewed it since',
      'a replica from before revisions writes the MongoDB document directly',
      async () => {
        const now = Date.now();
        const scope = randomUUID();
        const a = running(now - 60_000, { leaseUntil: now - 1 });
        await store().claim(scope, a, now - 60_000);
        const judged = (await store().claim(scope, running(now), now)) as RunningRecord;
        // The owner, still alive, records a recovery point after the read: the take-over judged on the read fails.
        expect(await store().addTarget(scope, a.owner, point, now + 30_000)).to.equal(true);
        expect(await store().takeOver(scope, judged, running(now))).to.equal(false);
        // A renewal by a replica that predates revisions moves only the lease: that is seen too.
        const again = (await store().claim(scope, running(now), now)) as RunningRecord;
        await database()
          .db.collection(IDEMPOTENCY_RECORDS)
          .updateOne({ _id: scope as never }, { $set: { leaseUntil: new Date(now + 45_000) } });
        expect(await store().takeOver(scope, again, running(now))).to.equal(false);
        const current = (await store().claim(scope, running(now), now)) as RunningRecord;
        const b = running(now);
        expect(await store().takeOver(scope, current, b)).to.equal(true);
        expect(await store().claim(scope, running(now), now)).to.include({ owner: b.owner });
      },
    );

    mongoOnly(
      'takes over a claim written before revisions existed',
      'a record from before revisions is a MongoDB document an older release wrote',
      async () => {
        const now = Date.now();
        const scope = randomUUID();
        const legacy = {
          _id: scope as never,
          state: 'running',
          fingerprint: 'f',
          owner: 'old',
          leaseUntil: new Date(now - 1),
          expiresAt: new Date(now + DAY),
          targets: [],
        };
        await database().db.collection(IDEMPOTENCY_RECORDS).insertOne(legacy);
        const judged = (await store().claim(scope, running(now), now)) as RunningRecord;
        expect(judged).to.include({ owner: 'old', revision: 0 });
        expect(await store().takeOver(scope, judged, running(now))).to.equal(true);
      },
    );

    /**
     * Runs `body` with a second store that reaches the database through a proxy holding its writes: `late(step)`
     * runs a step of it that times out (its write held), and `land()` lets the held write reach the database.
     */
    type Late = (step: (store: MongoIdempotencyStore) => Promise<unknown>) => Promise<void>;
    async function withLateWrites(body: (late: Late, land: () => Promise<void>) => Promise<void>): Promise<void> {
      const proxy = await startDatabaseProxy(mongoUri());
      const client = await new MongoClient(proxy.url, { socketTimeoutMS: 500, retryWrites: false }).connect();
      const behind = new MongoIdempotencyStore(client.db(database().db.databaseName), {
        atomic: false,
        withLock: (_key, write) => write(),
      });
      try {
        await body(
          async (step) => {
            proxy.hold((chunk) => ['delete', 'findAndModify', 'update'].some((name) => command(name)(chunk)));
            let failed = false;
            await step(behind).catch(() => (failed = true));
            expect(failed, 'the held write times out').to.equal(true);
          },
          () => proxy.release(), // resolves once the database has answered the held write: it is applied
        );
      } finally {
        await proxy.release();
        await client.close(true);
        await proxy.close();
      }
    }

    mongoOnly(
      'a hand-back that reaches the database after its request gave up does not free the next claim',
      LATE,
      async () => {
        // The first hand-back of A's claim is held on its way (the database looks stalled) until its caller's
        // deadline passed; a second one (the background retry) frees the key, B takes it over, and only then
        // does the first reach the database.
        await withLateWrites(async (late, land) => {
          const now = Date.now();
          const scope = randomUUID();
          const a = running(now);
          const b = running(now);
          await store().claim(scope, a, now);
          await late((behind) => behind.release(scope, a.owner));
          await store().release(scope, a.owner);
          expect(
            await store().takeOver(scope, (await store().claim(scope, running(now), now)) as RunningRecord, b),
          ).to.equal(true);
          await land();
          const raw = await database()
            .db.collection(IDEMPOTENCY_RECORDS)
            .findOne({ _id: scope as never });
          expect(raw?.releasedBy, 'the late hand-back landed').to.equal(a.owner);
          // B's claim is untouched: still B's, live, and not released (A's hand-back names A).
          const record = await store().claim(scope, running(now), now);
          expect(record).to.include({
            state: 'running',
            owner: b.owner,
            fingerprint: b.fingerprint,
            leaseUntil: b.leaseUntil,
          });
          expect(record).to.not.have.property('released');
        });
      },
    );

    mongoOnly(
      'a take-over that reaches the database after its request gave up leaves a finished record as it was',
      LATE,
      async () => {
        // C's take-over of A's lapsed claim is held until C's deadline passed (C answered 503); D, C's retry,
        // takes the claim over, executes and records its outcome; only then does C's take-over land.
        await withLateWrites(async (late, land) => {
          const now = Date.now();
          const scope = randomUUID();
          const a = running(now - 60_000, { leaseUntil: now - 1 });
          await store().claim(scope, a, now - 60_000);
          await late((behind) => behind.takeOver(scope, a, running(now)));
          const d = running(now);
          expect(await store().takeOver(scope, a, d)).to.equal(true);
          expect(await store().complete(scope, d.owner, done(now, 'the outcome'))).to.equal(true);
          await land();
          expect(await store().claim(scope, running(now), now)).to.include({
            state: 'done',
            fingerprint: 'f',
            sealed: 'the outcome',
          });
        });
      },
    );
  },
);
