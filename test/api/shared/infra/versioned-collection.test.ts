// The one write path for versioned documents, on the real database: a write repeated after its answer was
// lost (a driver's retry) meets its own first attempt, and the change id tells it from someone else's.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { VersionedCollection, type VersionedDocument } from '../../../../api/src/shared/infra/versioned-collection.js';
import { withTestDatabase, type TestDatabase } from '../../../../testkit/database.js';

interface Note extends VersionedDocument {
  text: string;
}

describe('infra: versioned collection', () => {
  let database: TestDatabase;
  let notes: VersionedCollection<Note>;
  withTestDatabase((opened) => (database = opened));
  beforeEach(() => {
    notes = new VersionedCollection<Note>(database.db.collection<Note>('notes'), database.locks);
  });
  const at = new Date('2026-11-20T10:00:00.000Z');
  const note = (): Note => ({ _id: randomUUID(), _version: 1, updatedAt: at, deletedAt: null, text: 'first' });

  it("takes an insert that meets its own first attempt for done, and still refuses another change's duplicate", async () => {
    const doc = note();
    await notes.insert(doc, 'change-a');
    await notes.insert(doc, 'change-a'); // the retry of an insert whose answer was lost
    const error = await notes.insert({ ...doc, text: 'other' }, 'change-b').catch((e: unknown) => e);
    expect(error).to.have.property('code', 11000);
    expect(await notes.insert(doc).catch((e: unknown) => e), 'without a change id').to.have.property('code', 11000);
    expect((await notes.find(doc._id))?.text).to.equal('first');
  });

  it("takes an update that finds its version already made by itself for done, and another change's for a lost race", async () => {
    const doc = note();
    await notes.insert(doc, 'create');
    const first = await notes.update(doc._id, 1, { set: { text: 'second' } }, at, 'change-a');
    expect(first).to.deep.include({ _version: 2, text: 'second' });
    expect(await notes.update(doc._id, 1, { set: { text: 'second' } }, at, 'change-a'), 'the retry').to.deep.include({
      _version: 2,
      text: 'second',
    });
    expect(
      await notes.update(doc._id, 1, { set: { text: 'third' } }, at, 'change-b'),
      'someone else, too late',
    ).to.equal(null);
    expect(await notes.softDelete(doc._id, 2, at, 'delete')).to.equal(true);
    expect(await notes.softDelete(doc._id, 2, at, 'delete'), 'the delete retried').to.equal(true);
    expect(await notes.softDelete(doc._id, 2, at, 'another delete')).to.equal(false);
  });
});
