// The MongoDB idempotency store against the real database: one claim wins, only the owner moves a claim on,
// expired records neither block a key nor stay forever.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { MongoIdempotencyStore, type RunningRecord } from '../../../api/src/http/idempotency-store.js';
import { withTestDatabase, type TestDatabase } from '../../support/database.js';

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
    expect(await store.takeOver(scope, 'someone else', next)).to.equal(false);
    expect(await store.takeOver(scope, mine.owner, next)).to.equal(true);
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
});
