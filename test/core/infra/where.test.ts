// Conditional writes to one document: the same outcome on MongoDB (atomic filter) and on FerretDB (read by
// _id under a lock, conditions checked by matches(), write by _id), and exactly one winner among racers.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { noLocks, processLocks } from '#core/infra/locks.js';
import { deleteOneWhere, matches, updateOneWhere } from '#core/infra/where.js';
import { withTestDatabase, type TestDatabase } from '../../../testkit/database.js';

describe('core: conditional writes', () => {
  describe('matches', () => {
    const doc = {
      _id: 'a',
      n: 3,
      at: new Date('2026-01-02T00:00:00Z'),
      lease: null,
      nested: { k: 'v' },
      status: 'pending',
    };
    const cases: [Record<string, unknown>, boolean][] = [
      [{ n: 3 }, true],
      [{ n: 4 }, false],
      [{ missing: null }, true],
      [{ lease: null }, true],
      [{ n: null }, false],
      [{ n: { $gte: 3, $lt: 4 } }, true],
      [{ n: { $gt: 3 } }, false],
      [{ at: { $lt: new Date('2026-01-03T00:00:00Z') } }, true],
      [{ at: { $lte: new Date('2026-01-01T00:00:00Z') } }, false],
      [{ at: new Date('2026-01-02T00:00:00Z') }, true],
      [{ 'nested.k': 'v' }, true],
      [{ 'nested.x': null }, true],
      [{ status: { $in: ['staged', 'pending'] } }, true],
      [{ status: { $ne: 'pending' } }, false],
      [{ lease: { $exists: true } }, true],
      [{ missing: { $exists: true } }, false],
      [{ $or: [{ lease: null }, { lease: { $lt: new Date() } }], status: 'pending' }, true],
      [{ $or: [{ n: 1 }, { n: 2 }] }, false],
      [{ missing: { $lt: 5 } }, false],
    ];
    for (const [filter, expected] of cases)
      it(`${JSON.stringify(filter)} → ${expected}`, () => expect(matches(doc, filter)).to.equal(expected));

    it('refuses an operator it does not know rather than guess', () => {
      expect(() => matches(doc, { n: { $mod: [2, 1] } })).to.throw(/unsupported/);
    });
  });

  let database: TestDatabase;
  withTestDatabase((opened) => (database = opened));

  for (const [name, locks] of [
    ['atomic filter (MongoDB)', noLocks],
    ['locked read and write by _id (FerretDB)', processLocks],
  ] as const) {
    describe(name, () => {
      it('writes only when the conditions hold, and returns the document after', async () => {
        const collection = database.db.collection<{ _id: string; n: number; status: string }>(
          `where_${randomUUID().slice(0, 8)}`,
        );
        await collection.insertOne({ _id: 'a', n: 1, status: 'pending' });
        expect(await updateOneWhere(collection, locks, 'a', { status: 'staged' }, { $inc: { n: 1 } })).to.equal(null);
        expect(
          await updateOneWhere(collection, locks, 'a', { status: 'pending', n: { $lt: 2 } }, { $inc: { n: 1 } }),
        ).to.deep.include({ n: 2 });
        expect(await updateOneWhere(collection, locks, 'missing', {}, { $inc: { n: 1 } })).to.equal(null);
        expect(await deleteOneWhere(collection, locks, 'a', { n: 1 })).to.equal(false);
        expect(await deleteOneWhere(collection, locks, 'a', { n: 2 })).to.equal(true);
        expect(await collection.countDocuments()).to.equal(0);
      });
    });
  }

  it('lets exactly one of many racing claims win on the embedded database', async () => {
    const collection = database.db.collection<{ _id: string; owner: string | null }>(
      `where_${randomUUID().slice(0, 8)}`,
    );
    await collection.insertOne({ _id: 'job', owner: null });
    const wins = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        updateOneWhere(collection, database.locks, 'job', { owner: null }, { $set: { owner: `worker-${i}` } }),
      ),
    );
    expect(wins.filter((w) => w !== null)).to.have.length(1);
  });
});
