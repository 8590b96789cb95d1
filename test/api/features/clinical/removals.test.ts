// A full sync's removal (api/src/features/clinical/records/removals.ts) against the database: what it finds stale, and
// what it keeps when an ingest writes one of those records between that read and the removal's commit.
import { expect } from 'chai';
import type { Collection } from 'mongodb';
import { removeStale } from '../../../../api/src/features/clinical/records/removals.js';
import type { ObservationDocument } from '../../../../api/src/features/clinical/records/document.js';
import type { StoredFields } from '../../../../api/src/features/clinical/records/bundle-records.js';
import { withTestDatabase } from '../../../../testkit/database.js';

const T1 = new Date('2026-01-31T10:00:00.000Z');
const RUN_START = new Date('2026-01-31T10:05:00.000Z');
const T3 = new Date('2026-01-31T10:10:00.000Z');
const target = { accountId: 'account-1', connectionId: 'connection-1' };

/** A stored record of the connection, as the store keeps it, last written at `updatedAt`. */
function doc(resourceType: string, id: string, updatedAt: Date, extra: Partial<ObservationDocument> = {}) {
  return {
    _id:
      resourceType === 'Observation' ? `${target.connectionId}/${id}` : `${target.connectionId}/${resourceType}/${id}`,
    ...(resourceType !== 'Observation' && { resourceType }),
    connectionId: target.connectionId,
    accountId: target.accountId,
    resourceId: id,
    code: { tokens: [], codes: [], systems: [] },
    category: { tokens: [], codes: [], systems: [] },
    date: null,
    sortDate: T1,
    confidentiality: 'N',
    sensitivity: [],
    updatedAt,
    firstIngestedAt: T1,
    seq: 1,
    resource: { resourceType, id },
    ...extra,
  } as ObservationDocument;
}

describe('clinical: a full sync’s removal (the database)', () => {
  let records: Collection<ObservationDocument>;
  withTestDatabase(({ db }) => (records = db.collection<ObservationDocument>('observations')));
  const visibility = { committed: 10, abandoned: [7], pending: [], kept: [] };

  it('removes what was last written before the run, of the types named; keeps what an ingest wrote meanwhile', async () => {
    await records.insertMany([
      doc('Condition', 'gone', T1),
      doc('Condition', 'raced', T1),
      doc('Condition', 'returned', RUN_START), // written by the run, at its very start
      doc('Observation', 'obs-1', T1),
      doc('Procedure', 'other-type', T1),
      doc('Condition', 'removed-before', T1, { removed: true }),
      doc('Condition', 'uncommitted', T1, { seq: 11 }),
      doc('Condition', 'abandoned', T1, { seq: 7 }),
      { ...doc('Condition', 'elsewhere', T1), _id: 'connection-2/Condition/elsewhere', connectionId: 'connection-2' },
    ]);
    const bundles: StoredFields[][] = [];
    const counts: [string, number][][] = [];
    const removed = await removeStale(
      {
        collection: records,
        applied: async () => visibility,
        write: async (_connectionId, stored, select) => {
          // An ingest replaces one of them after the stale read, before the removal's lease.
          await records.updateOne({ _id: 'connection-1/Condition/raced' }, { $set: { updatedAt: T3 } });
          const written = await select(stored, async () => {});
          bundles.push(written);
          return { written };
        },
      },
      { target, types: ['Condition', 'Observation'], before: RUN_START, at: T3 },
      async (bundle) => void counts.push([...bundle]),
    );
    expect([...removed].sort()).to.deep.equal([
      ['Condition', 1],
      ['Observation', 1],
    ]);
    expect(
      bundles
        .flat()
        .map((fields) => `${fields.resourceType ?? 'Observation'}/${fields.resourceId}`)
        .sort(),
    ).to.deep.equal(['Condition/gone', 'Observation/obs-1']);
    for (const fields of bundles.flat()) expect([fields.removed, fields.updatedAt]).to.deep.equal([true, T3]);
    expect(counts).to.have.length(1);
  });
});
