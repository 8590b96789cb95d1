// findById, the point read of hot paths: on the embedded database it must answer exactly what findOne does.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { findById, isDuplicateKey } from '#core/infra/mongo.js';
import { withTestDatabase, type TestDatabase } from '../../../testkit/database.js';

describe('core: findById', () => {
  let database: TestDatabase;
  withTestDatabase((opened) => (database = opened));

  it('answers what findOne({ _id }) answers: the whole document, its types kept; null when absent', async () => {
    const collection = database.db.collection<{ _id: string } & Record<string, unknown>>('documents');
    const id = `${randomUUID()}/${randomUUID()}`;
    await collection.insertMany([
      {
        _id: id,
        at: new Date('2026-11-20T10:00:00.000Z'),
        deletedAt: null,
        n: 3,
        nested: { k: ['v', 1] },
        text: 'Zoë 🩺',
      },
      { _id: `${id}x`, n: 4 },
    ]);
    const found = await findById(database.db, 'documents', id);
    expect(found).to.deep.equal(await collection.findOne({ _id: id }));
    expect(found).to.have.property('at').that.is.instanceOf(Date);
    expect(await findById(database.db, 'documents', randomUUID())).to.equal(null);
    expect(await findById(database.db, 'absent', id)).to.equal(null);
  });
});

describe('core: isDuplicateKey', () => {
  let database: TestDatabase;
  withTestDatabase((opened) => (database = opened));

  it('tells what a unique index refuses (the driver’s error and the fakes’) from any other failure', async () => {
    const collection = database.db.collection<{ _id: string }>('unique');
    const id = randomUUID();
    await collection.insertOne({ _id: id });
    const refused = await collection.insertOne({ _id: id }).catch((error: unknown) => error);
    expect(isDuplicateKey(refused)).to.equal(true);
    expect(isDuplicateKey(Object.assign(new Error(`E11000 duplicate key: ${id}`), { code: 11000 }))).to.equal(true);
    for (const other of [new Error('E11000 in the message only'), { code: 11001 }, { code: '11000' }, null, 11000])
      expect(isDuplicateKey(other), JSON.stringify(other)).to.equal(false);
  });
});
