// findById, the point read of hot paths: on the embedded database it must answer exactly what findOne does.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { findById } from '../../../core/src/infra/mongo.js';
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
