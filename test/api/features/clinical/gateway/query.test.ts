// The gateway's search filter run on the embedded database (FerretDB), clause by clause and combined: for
// each, exactly which observations come back, in both sort orders, and countDocuments agrees (it backs `total`).
// Every case also runs the same search over the connection's in-memory index (matcher.ts, connection-index.ts),
// which must keep exactly the same observations in the same order and count the same total.
import { expect } from 'chai';
import type { Collection } from 'mongodb';
import type { ObservationDocument } from '../../../../../api/src/features/clinical/records/document.js';
import { ConnectionIndex } from '../../../../../api/src/features/clinical/gateway/connection-index.js';
import {
  observationFilter,
  observationSort,
  type Grants,
  type SearchParams,
} from '../../../../../api/src/features/clinical/gateway/query.js';
import { withTestDatabase } from '../../../../../testkit/database.js';
import {
  ALL,
  AS_OF,
  CATEGORY,
  CONNECTION_A,
  CONNECTION_B,
  FIXTURES,
  LOCAL,
  LOINC,
  NOW,
  buildObservation,
} from './fixtures.js';

type Params = Omit<SearchParams, 'sort'>;

const ids = (from: number, to: number): string[] =>
  Array.from({ length: to - from + 1 }, (_, i) => `o${String(from + i).padStart(2, '0')}`);
const without = (list: string[], ...removed: string[]): string[] => list.filter((id) => !removed.includes(id));
const VISIBLE = ids(1, 31); // connection A at AS_OF
const HEART_RATE = ['o01', 'o02', 'o03', 'o09', 'o14', 'o17', 'o21', 'o24', 'o28']; // LOINC 8867-4
const GLUCOSE = ['o05', 'o08', 'o12', 'o15', 'o19', 'o26', 'o30'];
const HBA1C = ['o06', 'o10', 'o23', 'o29'];
const HEMOGLOBIN = ['o07', 'o11', 'o13', 'o20', 'o22', 'o27', 'o31'];
const VITAL_SIGNS = [...HEART_RATE, 'o18', 'o04', 'o16', 'o25'];
const IN_2023 = ['o03', 'o04', 'o05', 'o06', 'o07', 'o08', 'o31'];

/** `resourceIds` of `connectionId` in the order `sort` puts them: sortDate, then _id, one direction. */
function inOrder(
  resourceIds: string[],
  sort: SearchParams['sort'],
  connectionId: string,
  stored: ObservationDocument[],
): string[] {
  const direction = sort === 'date' ? 1 : -1;
  const docs = resourceIds.map((id) => stored.find((doc) => doc._id === `${connectionId}/${id}`)!);
  docs.sort((a, b) => direction * (a.sortDate.getTime() - b.sortDate.getTime() || (a._id < b._id ? -1 : 1)));
  return docs.map((doc) => doc.resourceId);
}

describe('observations: the search filter on the database and the index', () => {
  let observations: Collection<ObservationDocument>;
  const stored: ObservationDocument[] = [];
  const store = async (docs: ObservationDocument[]) => {
    await observations.insertMany(docs);
    stored.push(...docs);
  };
  withTestDatabase(({ db }) => (observations = db.collection('observations')));
  before(() => store(FIXTURES));

  async function found(filter: ReturnType<typeof observationFilter>, sort: SearchParams['sort']): Promise<string[]> {
    return (await observations.find(filter).sort(observationSort(sort)).toArray()).map((doc) => doc.resourceId);
  }

  async function expectMatches(
    expected: string[],
    params: Params = {},
    grants: Grants = ALL,
    options: { connectionId?: string; asOf?: Date } = {},
  ): Promise<void> {
    const connectionId = options.connectionId ?? CONNECTION_A;
    const filter = observationFilter(connectionId, grants, { ...params, sort: '-date' }, NOW, options.asOf ?? AS_OF);
    for (const sort of ['-date', 'date'] as const)
      expect(await found(filter, sort), sort).to.deep.equal(inOrder(expected, sort, connectionId, stored));
    expect(await observations.countDocuments(filter), 'countDocuments').to.equal(expected.length);
    const index = (await ConnectionIndex.build(observations.find({ connectionId }), 1e9))!;
    for (const sort of ['-date', 'date'] as const) {
      const { items, total } = index.search(grants, { ...params, sort }, NOW, options.asOf ?? AS_OF, undefined, 1000);
      expect(
        items.map((item) => item.resourceId),
        `index ${sort}`,
      ).to.deep.equal(inOrder(expected, sort, connectionId, stored));
      expect(total, 'index total').to.equal(expected.length);
    }
  }

  describe('always', () => {
    it('sorts by date then id, both directions, undated first in ascending order', async () => {
      const filter = observationFilter(CONNECTION_A, ALL, { sort: 'date' }, NOW, AS_OF);
      const ascending = [
        'o12',
        'o30',
        'o29',
        'o21',
        'o23',
        'o22',
        'o01',
        'o19',
        'o20',
        'o02',
        'o14',
        'o13',
        'o28',
        'o03',
        'o04',
        'o05',
        'o06',
        'o07',
        'o31',
        'o08',
        'o09',
        'o11',
        'o10',
        'o16',
        'o18',
        'o15',
        'o17',
        'o24',
        'o27',
        'o25',
        'o26',
      ];
      expect(await found(filter, 'date')).to.deep.equal(ascending);
      expect(await found(filter, '-date')).to.deep.equal([...ascending].reverse());
    });

    it('keeps to the connection', async () => {
      await expectMatches(['b01', 'b02', 'b03', 'b04', 'b05', 'b06', 'b07', 'b08'], {}, ALL, {
        connectionId: CONNECTION_B,
      });
      await expectMatches([], {}, ALL, { connectionId: 'no-such-connection' });
    });

    it('keeps what was ingested by asOf, and no later', async () => {
      await expectMatches(VISIBLE);
      await expectMatches([...VISIBLE, 'o32'], {}, ALL, { asOf: new Date(AS_OF.getTime() + 1) });
      await expectMatches(without(VISIBLE, 'o31'), {}, ALL, { asOf: new Date(AS_OF.getTime() - 1) });
    });
  });

  describe('grants', () => {
    it('LOINC allow-list: * for all, else a LOINC coding with a granted code', async () => {
      await expectMatches(HEART_RATE, {}, { ...ALL, loincCodes: ['8867-4'] });
      await expectMatches([...GLUCOSE, ...HBA1C], {}, { ...ALL, loincCodes: ['2339-0', '4548-4'] });
      await expectMatches([], {}, { ...ALL, loincCodes: ['HR'] }); // o18's local code is not a LOINC code
      await expectMatches([], {}, { ...ALL, loincCodes: [] });
    });

    it('confidentiality: the label (N without one) must be granted', async () => {
      await expectMatches(
        without(VISIBLE, 'o04', 'o13', 'o14', 'o15', 'o31', 'o16', 'o17'),
        {},
        { ...ALL, confidentiality: ['N'] },
      );
      await expectMatches(without(VISIBLE, 'o16'), {}, { ...ALL, confidentiality: ['N', 'L', 'R'] });
      await expectMatches(['o16', 'o17'], {}, { ...ALL, confidentiality: ['L', 'V'] });
    });

    it('sensitivity: every label must be granted; no label always passes', async () => {
      const unlabelled = without(VISIBLE, 'o13', 'o14', 'o15', 'o31');
      await expectMatches(unlabelled, {}, { ...ALL, sensitivity: [] });
      await expectMatches([...unlabelled, 'o13', 'o31'], {}, { ...ALL, sensitivity: ['HIV'] });
      await expectMatches([...unlabelled, 'o14'], {}, { ...ALL, sensitivity: ['PSY'] });
      await expectMatches(VISIBLE, {}, { ...ALL, sensitivity: ['PSY', 'HIV', 'ETH'] });
      // prefixes and extensions of a label are other labels
      await expectMatches(unlabelled, {}, { ...ALL, sensitivity: ['H', 'HI', 'HIVX', 'PS', 'PSYCH', 'hiv'] });
    });

    it('sensitivity: labels with characters a pattern reads specially are compared literally', async () => {
      const connectionId = 'labels-with-punctuation';
      const labels = ['a]b', '-^\\', 'x.y', 'xzy', 'é', '(?:', 'HIV|PSY', 'HIV\n'];
      await store(
        labels.map((label, i) =>
          buildObservation({ id: `l${i}`, kind: 'glucose', effective: '2024', connectionId, sensitivity: [label] }),
        ),
      );
      await expectMatches(
        ['l0', 'l2', 'l4'],
        {},
        { ...ALL, sensitivity: ['a]b', 'x.y', 'é', 'HIV', 'PSY'] },
        { connectionId },
      );
      await expectMatches(
        ['l1', 'l5', 'l6', 'l7'],
        {},
        { ...ALL, sensitivity: ['-^\\', '(?:', 'HIV|PSY', 'HIV\n'] },
        { connectionId },
      );
    });

    it('look-back: the range ends within the window; no date, no match', async () => {
      await expectMatches(['o09', 'o26', 'o27'], {}, { ...ALL, lookbackDays: 30 }); // from 2026-01-02
      await expectMatches(['o09', 'o11', 'o17', 'o24', 'o25', 'o26', 'o27'], {}, { ...ALL, lookbackDays: 400 }); // from 2024-12-28: o11 is all of 2024
      await expectMatches(['o09'], {}, { ...ALL, lookbackDays: 0 }); // only the ongoing period
    });
  });

  describe('code and category', () => {
    it('system|code, code, |code and system|', async () => {
      await expectMatches(HEART_RATE, { code: `${LOINC}|8867-4` });
      await expectMatches(HEART_RATE, { code: '8867-4' });
      await expectMatches(['o18'], { code: 'HR' });
      await expectMatches(['o18'], { code: `${LOCAL}|` });
      await expectMatches(['o19'], { code: '|GLU' });
      await expectMatches(['o19'], { code: 'GLU' });
      await expectMatches([], { code: '|2339-0' }); // LOINC codings have a system
      await expectMatches([], { code: `${LOINC}|GLU` });
      await expectMatches(without(VISIBLE, 'o18'), { code: `${LOINC}|` });
    });

    it('comma-separated alternatives, of one form or mixed', async () => {
      await expectMatches([...GLUCOSE, ...HBA1C], { code: `${LOINC}|2339-0,${LOINC}|4548-4` });
      await expectMatches([...HEART_RATE, 'o19', 'o18'], { code: `8867-4,|GLU,${LOCAL}|` });
    });

    it('category, with and without a system', async () => {
      await expectMatches(VITAL_SIGNS, { category: `${CATEGORY}|vital-signs` });
      await expectMatches([...GLUCOSE, ...HBA1C, ...HEMOGLOBIN], { category: 'laboratory' });
      await expectMatches(['o20'], { category: '|laboratory' });
      await expectMatches(without([...GLUCOSE, ...HBA1C, ...HEMOGLOBIN], 'o20'), {
        category: `${CATEGORY}|laboratory`,
      });
      await expectMatches(VISIBLE, { category: `${CATEGORY}|,|laboratory` });
    });
  });

  describe('date', () => {
    it('eq: the range inside the parameter, at every precision and with offsets', async () => {
      await expectMatches(IN_2023, { date: ['eq2023'] }); // not o28, which began in 2022
      await expectMatches(['o04', 'o05', 'o06', 'o07', 'o31'], { date: ['2023-05-10'] });
      await expectMatches(['o04', 'o05', 'o06', 'o07', 'o31'], { date: ['eq2023-05-10T08:30:00Z'] });
      await expectMatches(['o04', 'o05', 'o06', 'o07', 'o31'], { date: ['eq2023-05-10T10:30:00+02:00'] });
      await expectMatches(['o10', 'o11', 'o15', 'o16', 'o18'], { date: ['eq2024'] }); // not the ongoing o09
      await expectMatches(['o10'], { date: ['eq2024-02'] }); // not o11, the whole of 2024
      await expectMatches(['o21', 'o22', 'o23'], { date: ['eq2020'] }); // o21 is 2019-12-31 in New York
      await expectMatches(['o29'], { date: ['eq2019'] });
    });

    it('eq with instants: inside the second, and not a millisecond beside it', async () => {
      await expectMatches(['o02'], { date: ['eq2022-06-15T14:00:00.250Z'] });
      await expectMatches(['o02'], { date: ['eq2022-06-15T14:00:00Z'] });
      await expectMatches([], { date: ['eq2022-06-15T14:00:00.251Z'] });
      await expectMatches([], { date: ['eq2025-12-31T23:59:58Z'] });
      await expectMatches(['o25'], { date: ['eq2025-12-31T23:59:59Z'] });
    });

    it('ne: every dated resource not inside; never one without a date', async () => {
      await expectMatches(without(VISIBLE, 'o12', ...IN_2023), { date: ['ne2023'] });
    });

    it('gt and lt compare the range ends', async () => {
      await expectMatches(['o09', 'o10', 'o11', 'o15', 'o16', 'o17', 'o18', 'o24', 'o25', 'o26', 'o27'], {
        date: ['gt2023'],
      });
      await expectMatches(['o21', 'o22', 'o23', 'o29', 'o30'], { date: ['lt2021'] });
      await expectMatches(['o09', 'o26', 'o27'], { date: ['gt2025-12-31T23:59:59Z'] });
    });

    it('ge and le: gt or eq, lt or eq', async () => {
      await expectMatches(['o09', 'o25', 'o26', 'o27'], { date: ['ge2025-12-31'] });
      await expectMatches(['o21', 'o29', 'o30'], { date: ['le2020-01-15'] }); // o23 begins on that day but ends later
      await expectMatches(['o09', 'o10', 'o11', 'o15', 'o16', 'o17', 'o18', 'o24', 'o25', 'o26', 'o27', ...IN_2023], {
        date: ['ge2023'],
      });
    });

    it('several date parameters all apply', async () => {
      await expectMatches(['o28', ...without(IN_2023, 'o08')], { date: ['gt2022', 'lt2023-06'] });
      await expectMatches([], { date: ['lt2020', 'gt2026'] });
    });
  });

  describe('combined', () => {
    it('grants and parameters together', async () => {
      const grants: Grants = {
        loincCodes: ['8867-4', '2339-0'],
        confidentiality: ['N', 'R'],
        sensitivity: ['PSY'],
        lookbackDays: null,
      };
      await expectMatches(
        ['o02', 'o03', 'o09', 'o14', 'o24', 'o28'],
        { code: `${LOINC}|8867-4`, date: ['ge2022'] },
        grants,
      );
    });

    it('unlabelled laboratory results of the look-back window', async () => {
      const grants: Grants = { loincCodes: ['*'], confidentiality: ['N'], sensitivity: [], lookbackDays: 800 }; // from 2023-11-24
      await expectMatches(['o10', 'o11', 'o26', 'o27'], { category: 'laboratory' }, grants);
    });

    it('code alternatives, category and a date range', async () => {
      await expectMatches(
        ['o05', 'o07', 'o08', 'o13', 'o19', 'o31'],
        { code: `2339-0,${LOINC}|718-7`, category: `${CATEGORY}|laboratory`, date: ['ge2021', 'le2023-12'] },
        { ...ALL, sensitivity: ['HIV'] },
      );
    });

    it('the other connection, with the same grants', async () => {
      await expectMatches(
        ['b01', 'b06'],
        { code: '8867-4' },
        { ...ALL, loincCodes: ['8867-4'] },
        { connectionId: CONNECTION_B },
      );
      await expectMatches(
        ['b02', 'b04', 'b05', 'b06'],
        { date: ['ge2024'] },
        { ...ALL, sensitivity: [] },
        { connectionId: CONNECTION_B },
      );
    });
  });
});
