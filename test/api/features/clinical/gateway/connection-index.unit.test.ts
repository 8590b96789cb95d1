// The gateway's per-replica index of a connection: the byte budget (a connection over it is not indexed, and
// not read again for a while), postings by code, generation tokens.
import { expect } from 'chai';
import { ConnectionIndex } from '../../../../../api/src/features/clinical/gateway/connection-index.js';
import type { Position } from '../../../../../api/src/features/clinical/gateway/entries.js';
import {
  ConnectionIndexes,
  type IndexSource,
} from '../../../../../api/src/features/clinical/gateway/connection-indexes.js';
import type { ObservationDocument } from '../../../../../api/src/features/clinical/records/document.js';
import {
  documentRow,
  foldBundles,
  type CommittedBundle,
} from '../../../../../api/src/features/clinical/records/rows.js';
import type { Grants, SearchParams } from '../../../../../api/src/features/clinical/gateway/query.js';
import { ALL, AS_OF, CONNECTION_A, FIXTURES, NOW } from './fixtures.js';

async function* documents(connectionId: string): AsyncIterable<ObservationDocument> {
  yield* FIXTURES.filter((doc) => doc.connectionId === connectionId);
}

/** A source with no checkpoints and no records: every load reads the documents whole (all()). */
function wholeReads(load: (connectionId: string) => AsyncIterable<ObservationDocument>): IndexSource {
  return {
    all: load,
    changes: async () => null,
    checkpoint: async () => null,
    writeCheckpoint: async () => {},
  };
}

describe('observations: the connection index', () => {
  it('is not built past its byte budget', async () => {
    const whole = (await ConnectionIndex.build(documents(CONNECTION_A), 1e9))!;
    expect(whole.size).to.equal(FIXTURES.filter((doc) => doc.connectionId === CONNECTION_A).length);
    expect(await ConnectionIndex.build(documents(CONNECTION_A), whole.bytes - 1)).to.equal(null);
    expect(await ConnectionIndex.build(documents(CONNECTION_A), whole.bytes)).to.be.instanceOf(ConnectionIndex);
  });

  it('finds by code through its postings: any alternative, each observation once, unknown codes none', async () => {
    const index = (await ConnectionIndex.build(documents(CONNECTION_A), 1e9))!;
    const search = (code: string) => index.search(ALL, { code, sort: 'date' }, NOW, AS_OF, undefined, 100);
    const heartRates = search('8867-4');
    expect(heartRates.total).to.equal(9);
    const both = search(`8867-4,http://loinc.org|8867-4,|GLU`); // two alternatives file the same observations
    expect(both.total).to.equal(10);
    expect(both.items.map((i) => i.resourceId)).to.include.members([
      ...heartRates.items.map((i) => i.resourceId),
      'o19',
    ]);
    expect(search('no-such-code')).to.deep.equal({ total: 0, items: [] });
  });

  it('reads a connection once per token, never serves one built under another, and remembers one too large', async () => {
    const loads: string[] = [];
    const load = (connectionId: string) => {
      loads.push(connectionId);
      return documents(connectionId);
    };
    const indexes = new ConnectionIndexes(wholeReads(load), 1e9);
    const [first, joined] = await Promise.all([indexes.get(CONNECTION_A, 't0'), indexes.get(CONNECTION_A, 't0')]);
    expect(first).to.be.instanceOf(ConnectionIndex);
    expect(joined).to.equal(first); // one build for both
    expect(await indexes.get(CONNECTION_A, 't0')).to.equal(first);
    expect(loads).to.have.length(1);
    const second = await indexes.get(CONNECTION_A, 't1'); // an ingest replaced the token
    expect(second).to.not.equal(first);
    expect(second!.token).to.equal('t1');
    expect(await indexes.get(CONNECTION_A, 't1')).to.equal(second);
    expect(loads).to.have.length(2);

    const tiny = new ConnectionIndexes(wholeReads(load), 4000); // a quarter of it per connection
    expect(await tiny.get(CONNECTION_A, 't0')).to.equal(null);
    expect(await tiny.get(CONNECTION_A, 't5')).to.equal(null);
    expect(loads).to.have.length(3);
    expect(await new ConnectionIndexes(wholeReads(load), 0).get(CONNECTION_A, 't0')).to.equal(null);
    expect(loads).to.have.length(3);
  });

  it('counts an observation read twice once', async () => {
    const docs = FIXTURES.filter((doc) => doc.connectionId === CONNECTION_A);
    async function* twice(): AsyncIterable<ObservationDocument> {
      yield* docs;
      yield* docs.slice(0, 3);
    }
    const index = (await ConnectionIndex.build(twice(), 1e9))!;
    expect(index.size).to.equal(docs.length);
    expect(index.search(ALL, { sort: 'date' }, NOW, AS_OF, undefined, 1000).total).to.equal(docs.length - 1); // o32 arrived after AS_OF
  });

  it("keeps a search's matches for its next pages, but not for a walk older than an ingest or under a look-back window", async () => {
    const kept = (await ConnectionIndex.build(documents(CONNECTION_A), 1e9))!;
    const fresh = async () => (await ConnectionIndex.build(documents(CONNECTION_A), 1e9))!;
    const later = new Date(AS_OF.getTime() + 60_000); // after every ingest (o32 came just after AS_OF)
    const searches: [Grants, Omit<SearchParams, 'sort'>][] = [
      [ALL, {}],
      [ALL, { code: '8867-4,|GLU' }],
      [
        { ...ALL, sensitivity: [], confidentiality: ['N'] },
        { category: 'laboratory', date: ['ge2021', 'lt2026-01'] },
      ],
    ];
    for (const sort of ['date', '-date'] as const) {
      for (const [grants, params] of searches) {
        let after: Position | undefined;
        for (let page = 0; page < 20; page++) {
          const answer = kept.search(grants, { ...params, sort }, NOW, later, after, 4);
          expect(answer, `${sort} ${JSON.stringify(params)} page ${page}`).to.deep.equal(
            (await fresh()).search(grants, { ...params, sort }, NOW, later, after, 4),
          );
          if (answer.items.length < 4) break;
          after = answer.items.at(-1);
        }
      }
    }
    const heartRates = (asOf: Date) =>
      kept
        .search(ALL, { sort: 'date', code: '8867-4' }, NOW, asOf, undefined, 100)
        .items.map((item) => item.resourceId);
    expect(heartRates(later)).to.include('o32');
    expect(heartRates(AS_OF)).not.to.include('o32'); // a walk that began before o32 arrived
    const tenYears = { ...ALL, lookbackDays: 3650 };
    const then = kept.search(tenYears, { sort: 'date' }, NOW, later, undefined, 100).total;
    const farLater = new Date(NOW.getTime() + 15 * 365 * 86_400_000);
    const now = kept.search(tenYears, { sort: 'date' }, farLater, later, undefined, 100).total;
    expect(now).to.be.below(then);
    expect(now).to.equal((await fresh()).search(tenYears, { sort: 'date' }, farLater, later, undefined, 100).total);
  });

  it('continues after any position, one it holds or not, as a plain filter of the whole result would', async () => {
    const index = (await ConnectionIndex.build(documents(CONNECTION_A), 1e9))!;
    const later = new Date(AS_OF.getTime() + 60_000);
    const grants = { ...ALL, confidentiality: ['N'], sensitivity: [] };
    const compare = (a: Position, b: Position) => a.sortDate - b.sortDate || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    // Every stored position (matching or filtered out), one between two, and ones past either end.
    const positions: Position[] = FIXTURES.filter((doc) => doc.connectionId === CONNECTION_A).flatMap((doc) => [
      { sortDate: doc.sortDate.getTime(), id: doc._id },
      { sortDate: doc.sortDate.getTime(), id: `${doc._id}~` },
    ]);
    positions.push({ sortDate: -8.64e15, id: '' }, { sortDate: 8.64e15, id: '~' });
    for (const sort of ['date', '-date'] as const) {
      const whole = index.search(grants, { sort }, NOW, later, undefined, 1e6);
      const step = sort === 'date' ? 1 : -1;
      for (const after of positions) {
        for (const limit of [1, 3, 100]) {
          const expected = whole.items.filter((item) => compare(item, after) * step > 0).slice(0, limit);
          expect(index.search(grants, { sort }, NOW, later, after, limit), `${sort} after ${after.id}`).to.deep.equal({
            total: whole.total,
            items: expected,
          });
        }
      }
    }
  });

  it('counts a fixed cost for every index, an empty one too', async () => {
    const empty = (await ConnectionIndex.build(documents('no-such-connection'), 1e9))!;
    expect(empty.size).to.equal(0);
    expect(empty.bytes).to.be.at.least(4096);
  });

  describe('loaded from a checkpoint and the bundles after it', () => {
    const docs = FIXTURES.filter((doc) => doc.connectionId === CONNECTION_A);
    const later = new Date(AS_OF.getTime() + 60_000);
    const at = (doc: ObservationDocument) => doc.firstIngestedAt.getTime();
    // A bundle per time the fixtures were ingested, then one replacing an observation of the first (which keeps when
    // it was first written).
    const times = [...new Set(docs.map(at))].sort((a, b) => a - b);
    const replaced = { ...docs[0]!, resource: { ...docs[0]!.resource, status: 'amended' } };
    const bundles: CommittedBundle[] = [
      ...times.map((time, i) => ({
        gen: i + 1,
        at: time,
        rows: docs.filter((doc) => at(doc) === time).map(documentRow),
      })),
      {
        gen: times.length + 1,
        at: later.getTime(),
        rows: [{ ...documentRow(replaced), firstIngestedAt: later.getTime() }],
      },
    ];
    const LAST = bundles.length;

    /** A source holding `committed` bundles, a checkpoint of the first `checkpointAt`, and records from `recordsFrom`. */
    function source(state: { committed: number; checkpointAt?: number; recordsFrom?: number }) {
      const calls: string[] = [];
      const from = state.recordsFrom ?? 1;
      const rowsUpTo = (gen: number) => [...foldBundles([], bundles.slice(0, gen)).values()];
      const src: IndexSource = {
        all: () => {
          calls.push('all');
          return (async function* () {
            for (const row of rowsUpTo(state.committed))
              yield {
                ...docs.find((doc) => doc._id === row._id)!,
                ...(row._id === replaced._id && state.committed === LAST && { resource: replaced.resource }),
              };
          })();
        },
        changes: async (_id, after) => {
          calls.push(`changes ${after}`);
          if (after + 1 < from) return null; // forgotten
          return { gen: state.committed, bundles: bundles.slice(after, state.committed) };
        },
        checkpoint: async () => {
          calls.push('checkpoint');
          return state.checkpointAt === undefined
            ? null
            : { gen: state.checkpointAt, rows: rowsUpTo(state.checkpointAt) };
        },
        writeCheckpoint: async () => {
          calls.push('writeCheckpoint');
        },
      };
      return { src, calls };
    }

    const answers = (index: ConnectionIndex) =>
      (['date', '-date'] as const).flatMap((sort) =>
        [AS_OF, later].map((asOf) => index.search(ALL, { sort }, NOW, asOf, undefined, 1000)),
      );

    it('answers as an index read whole from the documents, from records alone, a checkpoint, or both', async () => {
      const truth = async (committed: number) =>
        answers((await new ConnectionIndexes(source({ committed, recordsFrom: 99 }).src, 1e9).get(CONNECTION_A, 't'))!);
      for (const committed of [LAST - 1, LAST]) {
        const expected = await truth(committed);
        expect(expected[0]!.total).to.be.above(0);
        const states = [
          { committed },
          { committed, checkpointAt: 1, recordsFrom: 2 },
          { committed, checkpointAt: LAST - 1 },
        ];
        for (const state of states) {
          const { src, calls } = source(state);
          const index = (await new ConnectionIndexes(src, 1e9).get(CONNECTION_A, 't'))!;
          expect(answers(index), JSON.stringify(state)).to.deep.equal(expected);
          expect(index.gen).to.equal(committed);
          expect(calls).to.not.include('all');
        }
      }
      const replacedTail = (await truth(LAST))[1]!.items.find((item) => item.id === replaced._id)!.tail.toString();
      expect(replacedTail).to.include('"status":"amended"');
    });

    it('brings a stale index up to date with the bundles since, never reading the connection whole', async () => {
      const state = { committed: LAST - 1 };
      const { src, calls } = source(state);
      const indexes = new ConnectionIndexes(src, 1e9);
      const first = (await indexes.get(CONNECTION_A, 't2'))!;
      state.committed = LAST; // an ingest: a new token
      const second = (await indexes.get(CONNECTION_A, 't3'))!;
      expect(second).to.not.equal(first);
      expect(second.token).to.equal('t3');
      expect(calls).to.deep.equal(['checkpoint', 'changes 0', `changes ${LAST - 1}`]);
      const whole = (await new ConnectionIndexes(source({ committed: LAST, recordsFrom: 99 }).src, 1e9).get(
        CONNECTION_A,
        't',
      ))!;
      expect(answers(second)).to.deep.equal(answers(whole));
    });

    it('reads a connection whole only when neither covers it, and then has it checkpointed', async () => {
      const { src, calls } = source({ committed: LAST, checkpointAt: 1, recordsFrom: 3 });
      const index = (await new ConnectionIndexes(src, 1e9).get(CONNECTION_A, 't'))!;
      expect(index.gen).to.equal(undefined); // not advanced from: a stale one is loaded again
      expect(calls).to.deep.equal(['checkpoint', 'changes 1', 'all', 'writeCheckpoint']);
    });

    it('does not index a connection whose checkpoint says it is too large', async () => {
      const { src, calls } = source({ committed: LAST });
      src.checkpoint = async () => {
        calls.push('checkpoint');
        return { gen: LAST, oversized: true, bytes: 1e12 };
      };
      const indexes = new ConnectionIndexes(src, 1e9);
      expect(await indexes.get(CONNECTION_A, 't')).to.equal(null);
      expect(await indexes.get(CONNECTION_A, 't2')).to.equal(null); // remembered
      expect(calls).to.deep.equal(['checkpoint']);
    });

    it('gives back the rows it was built from', async () => {
      const rows = [...foldBundles([], bundles).values()];
      const index = ConnectionIndex.fromRows(rows, 1e9, 't', LAST)!;
      const byId = (a: { _id: string }, b: { _id: string }) => (a._id < b._id ? -1 : 1);
      expect([...index.rows()].sort(byId)).to.deep.equal([...rows].sort(byId));
    });
  });
});
