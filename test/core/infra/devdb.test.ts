// The embedded database (tools/devdb: FerretDB v1.24 on SQLite) finds documents by _id through an index,
// as MongoDB does. FerretDB's own _id index is on an expression its lookups never use, so without the
// devdb's extra index every read by _id — every point read Portico makes — scanned the whole collection.
import { expect } from 'chai';
import { until } from '../../../testkit/until.js';
import { randomUUID } from 'node:crypto';
import { withTestDatabase, type TestDatabase } from '../../../testkit/database.js';

describe('core: the embedded database', () => {
  let database: TestDatabase;
  withTestDatabase((opened) => (database = opened));

  it('looks a document up by _id through an index, soon after its collection is created', async () => {
    const collection = database.db.collection<{ _id: string; n: number }>(`lookups_${randomUUID().slice(0, 8)}`);
    await collection.insertMany(Array.from({ length: 50 }, (_, n) => ({ _id: randomUUID(), n })));
    // A real read first: it starts a transaction, which is when SQLite notices a schema change (EXPLAIN alone
    // plans with the schema the connection last saw).
    const plan = async () => {
      await collection.findOne({ _id: 'absent' });
      return JSON.stringify(
        ((await collection.find({ _id: 'absent' }).explain()) as { queryPlanner?: unknown }).queryPlanner,
      );
    };
    let last = '';
    await until(
      'lookups by _id to use the index',
      async () => /USING INDEX \S+__id_lookup/.test((last = await plan())),
      { intervalMs: 100, diagnose: () => `still a table scan: ${last}` },
    );
    expect(await collection.findOne({ _id: 'absent' })).to.equal(null);
  });
});
