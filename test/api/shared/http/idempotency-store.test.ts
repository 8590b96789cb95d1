// The MongoDB idempotency store against the real database: one claim wins, only the owner moves a claim on,
// expired records neither block a key nor stay forever, and a hand-back that lands late cannot free a newer claim.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { MongoIdempotencyStore, type RunningRecord } from '../../../../api/src/shared/http/idempotency-store.js';
import { command, startDatabaseProxy } from '../../../../testkit/database-proxy.js';
import { mongoUri } from '../../../../testkit/services.js';
import { withTestDatabase, type TestDatabase } from '../../../../testkit/database.js';

const DAY = 24 * 3_600_000;

describe('http: MongoDB idempotency store', () => {
  let database: TestDatabase;
  let store: MongoIdempotencyStore;
  withTestDatabase((d) => (database = d));
  before(async () => {
    store = new MongoIdempotencyStore(database.db, database.locks);
    await store.init();
  });

  const running = (now: number, overrides: Partial<RunningRecord> = {}): RunningRecord => ({ state: 'running', fingerprint: 'f', owner: randomUUID(), leaseUntil: now + 30_000, expiresAt: now + DAY, targets: [], ...overrides });
  const point = { collection: 'patients', id: 'x', changeId: 'c', version: 1 };

  it('lets exactly one of many concurrent claims win and shows the others the winner', async () => {
    const scope = randomUUID();
    const now = Date.now();
    const claims = Array.from({ length: 10 }, () => running(now));
    const results = await Promise.all(claims.map((c) => store.claim(scope, c, now)));
    const winners = results.filter((r) => r === null);
    expect(winners).to.have.length(1);
    const owner = claims[results.indexOf(null)]!.owner;
    for (const r of results.filter((r) => r !== null)) expect(r).to.include({ state: 'running', owner });
  });

  it('moves a claim on only for its owner', async () => {
    const scope = randomUUID();
    const now = Date.now();
    const mine = running(now);
    await store.claim(scope, mine, now);
    expect(await store.addTarget(scope, 'someone else', point, now + 30_000)).to.equal(false);
    expect(await store.addTarget(scope, mine.owner, point, now + 60_000)).to.equal(true);
    const seen = await store.claim(scope, running(now), now);
    expect(seen).to.deep.include({ state: 'running', owner: mine.owner, leaseUntil: now + 60_000, targets: [point] });

    const next = running(now);
    const judged = seen as RunningRecord;
    expect(await store.takeOver(scope, { ...judged, owner: 'someone else' }, next)).to.equal(false);
    expect(await store.takeOver(scope, judged, next)).to.equal(true);
    expect(await store.complete(scope, mine.owner, { state: 'done', fingerprint: 'f', sealed: 's', expiresAt: now + DAY })).to.equal(false);
    await store.release(scope, mine.owner);
    expect(await store.complete(scope, next.owner, { state: 'done', fingerprint: 'f', sealed: 's', expiresAt: now + DAY })).to.equal(true);
    expect(await store.claim(scope, running(now), now)).to.deep.equal({ state: 'done', fingerprint: 'f', sealed: 's', expiresAt: now + DAY });
  });

  it('treats an expired record as absent, and sweeps expired records away while keeping live ones', async () => {
    const now = Date.now();
    const old = randomUUID();
    await store.claim(old, running(now - 2 * DAY, { expiresAt: now - DAY }), now - 2 * DAY);
    expect(await store.claim(old, running(now), now)).to.equal(null); // the old one did not block the key

    const expired = randomUUID();
    const live = randomUUID();
    await store.claim(expired, running(now - 2 * DAY, { expiresAt: now - 1 }), now - 2 * DAY);
    await store.claim(live, running(now), now);
    expect(await store.sweep(now, 100)).to.be.at.least(1);
    const records = database.db.collection('idempotency_records');
    expect(await records.countDocuments({ _id: expired as never })).to.equal(0);
    expect(await records.countDocuments({ _id: live as never })).to.equal(1);
    expect(await records.countDocuments({ _id: old as never })).to.equal(1);
  });

  it('hands a claim back by marking it released by its owner, only for its owner', async () => {
    const now = Date.now();
    const scope = randomUUID();
    const first = running(now);
    await store.claim(scope, first, now);
    await store.release(scope, 'someone else');
    expect(await store.claim(scope, running(now), now)).to.include({ owner: first.owner, leaseUntil: first.leaseUntil });
    await store.release(scope, first.owner);
    const judged = (await store.claim(scope, running(now), now)) as RunningRecord;
    expect(judged).to.include({ owner: first.owner, released: true });
    const next = running(now);
    expect(await store.takeOver(scope, judged, next)).to.equal(true);
    const taken = await store.claim(scope, running(now), now);
    expect(taken).to.include({ owner: next.owner });
    expect(taken).to.not.have.property('released');
  });

  it('takes a claim over only as it was judged: not once a recovery point, a renewal or an older replica wrote to it since', async () => {
    const now = Date.now();
    const scope = randomUUID();
    const a = running(now - 60_000, { leaseUntil: now - 1 });
    await store.claim(scope, a, now - 60_000);
    const judged = (await store.claim(scope, running(now), now)) as RunningRecord;
    // The owner, still alive, records a recovery point after the read: the take-over judged on the read fails.
    expect(await store.addTarget(scope, a.owner, point, now + 30_000)).to.equal(true);
    expect(await store.takeOver(scope, judged, running(now))).to.equal(false);
    // A renewal by a replica that predates revisions moves only the lease: that is seen too.
    const again = (await store.claim(scope, running(now), now)) as RunningRecord;
    await database.db.collection('idempotency_records').updateOne({ _id: scope as never }, { $set: { leaseUntil: new Date(now + 45_000) } });
    expect(await store.takeOver(scope, again, running(now))).to.equal(false);
    const current = (await store.claim(scope, running(now), now)) as RunningRecord;
    const b = running(now);
    expect(await store.takeOver(scope, current, b)).to.equal(true);
    expect(await store.claim(scope, running(now), now)).to.include({ owner: b.owner });
  });

  it('takes over a claim written before revisions existed', async () => {
    const now = Date.now();
    const scope = randomUUID();
    await database.db.collection('idempotency_records').insertOne({ _id: scope as never, state: 'running', fingerprint: 'f', owner: 'old', leaseUntil: new Date(now - 1), expiresAt: new Date(now + DAY), targets: [] });
    const judged = (await store.claim(scope, running(now), now)) as RunningRecord;
    expect(judged).to.include({ owner: 'old', revision: 0 });
    expect(await store.takeOver(scope, judged, running(now))).to.equal(true);
  });

  /**
   * Runs `body` with a second store that reaches the database through a proxy holding its writes: `late(step)`
   * runs a step of it that times out (its write held), and `land()` lets the held write reach the database.
   */
  async function withLateWrites(body: (late: (step: (store: MongoIdempotencyStore) => Promise<unknown>) => Promise<void>, land: () => Promise<void>) => Promise<void>): Promise<void> {
    const proxy = await startDatabaseProxy(mongoUri());
    const client = await new MongoClient(proxy.url, { socketTimeoutMS: 500, retryWrites: false }).connect();
    const behind = new MongoIdempotencyStore(client.db(database.db.databaseName), { atomic: false, withLock: (_key, write) => write() });
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
      proxy.release();
      await client.close(true);
      await proxy.close();
    }
  }

  it('a hand-back that reaches the database after its request gave up does not free the next claim', async () => {
    // The first hand-back of A's claim is held on its way (the database looks stalled) until its caller's
    // deadline passed; a second one (the background retry) frees the key, B takes it over, and only then
    // does the first reach the database.
    await withLateWrites(async (late, land) => {
      const now = Date.now();
      const scope = randomUUID();
      const a = running(now);
      const b = running(now);
      await store.claim(scope, a, now);
      await late((behind) => behind.release(scope, a.owner));
      await store.release(scope, a.owner);
      expect(await store.takeOver(scope, (await store.claim(scope, running(now), now)) as RunningRecord, b)).to.equal(true);
      await land();
      const raw = await database.db.collection('idempotency_records').findOne({ _id: scope as never });
      expect(raw?.releasedBy, 'the late hand-back landed').to.equal(a.owner);
      // B's claim is untouched: still B's, live, and not released (A's hand-back names A).
      const record = await store.claim(scope, running(now), now);
      expect(record).to.include({ state: 'running', owner: b.owner, fingerprint: b.fingerprint, leaseUntil: b.leaseUntil });
      expect(record).to.not.have.property('released');
    });
  });

  it('a take-over that reaches the database after its request gave up leaves a finished record as it was', async () => {
    // C's take-over of A's lapsed claim is held until C's deadline passed (C answered 503); D, C's retry,
    // takes the claim over, executes and records its outcome; only then does C's take-over land.
    await withLateWrites(async (late, land) => {
      const now = Date.now();
      const scope = randomUUID();
      const a = running(now - 60_000, { leaseUntil: now - 1 });
      await store.claim(scope, a, now - 60_000);
      await late((behind) => behind.takeOver(scope, a, running(now)));
      const d = running(now);
      expect(await store.takeOver(scope, a, d)).to.equal(true);
      expect(await store.complete(scope, d.owner, { state: 'done', fingerprint: 'f', sealed: 'the outcome', expiresAt: now + DAY })).to.equal(true);
      await land();
      expect(await store.claim(scope, running(now), now)).to.include({ state: 'done', fingerprint: 'f', sealed: 'the outcome' });
    });
  });
});
