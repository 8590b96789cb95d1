// Keyset paging over the search on the embedded database and over the connection's index (rebuilt before
// every page, as an ingest makes every replica do): a walk in pages of three returns every match exactly
// once, in order, across ties that span pages, while observations keep arriving between pages.
import { expect } from 'chai';
import type { Collection, Filter } from 'mongodb';
import type { ObservationDocument } from '../../../../../api/src/features/clinical/records/document.js';
import { ConnectionIndex } from '../../../../../api/src/features/clinical/gateway/connection-index.js';
import {
  afterPosition,
  observationFilter,
  observationSort,
  type Grants,
  type SearchParams,
} from '../../../../../api/src/features/clinical/gateway/query.js';
import { withTestDatabase } from '../../../../../testkit/database.js';
import { ALL, AS_OF, CONNECTION_A, FIXTURES, NOW, buildObservation, type ObservationSpec } from './fixtures.js';

const PAGE_SIZE = 3;

describe('observations: keyset paging on the database', () => {
  let observations: Collection<ObservationDocument>;
  let arrived = 0;
  withTestDatabase(({ db }) => (observations = db.collection('observations')));
  before(async () => {
    await observations.insertMany(FIXTURES);
  });

  /** New observations, ingested after the walk began, around and inside the page just read. */
  async function arrive(lastOfPage: ObservationDocument): Promise<void> {
    const base = lastOfPage.sortDate.toISOString();
    const later = new Date(AS_OF.getTime() + 60_000 * ++arrived);
    const specs: ObservationSpec[] = [
      { id: `n${arrived}-tie-before`, kind: 'heartRate', effective: base }, // same sortDate, ids on both sides
      { id: `z${arrived}-tie-after`, kind: 'glucose', effective: base },
      { id: `n${arrived}-old`, kind: 'hemoglobin', effective: '2015-04-01' },
      { id: `n${arrived}-new`, kind: 'hba1c', effective: '2026-01-30T10:00:00Z' },
      { id: `n${arrived}-undated`, kind: 'glucose' },
    ];
    await observations.insertMany(specs.map((spec) => buildObservation({ ...spec, firstIngestedAt: later })));
  }

  type Last = { sortDate: Date; _id: string };
  type PageOf = (
    grants: Grants,
    params: SearchParams,
    last: Last | undefined,
  ) => Promise<ObservationDocument[] | { resourceId: string; sortDate: number; id: string }[]>;

  const fromDatabase: PageOf = (grants, params, last) => {
    const filter = observationFilter(CONNECTION_A, grants, params, NOW, AS_OF);
    const query: Filter<ObservationDocument> = last
      ? { $and: [filter, afterPosition(params.sort, { sortDate: last.sortDate, id: last._id })] }
      : filter;
    return observations.find(query).sort(observationSort(params.sort)).limit(PAGE_SIZE).toArray();
  };

  const fromIndex: PageOf = async (grants, params, last) => {
    const index = (await ConnectionIndex.build(observations.find({ connectionId: CONNECTION_A }), 1e9))!;
    const after = last && { sortDate: last.sortDate.getTime(), id: last._id };
    return index.search(grants, params, NOW, AS_OF, after, PAGE_SIZE).items;
  };

  async function walk(
    grants: Grants,
    params: SearchParams,
    pageOf: PageOf = fromDatabase,
  ): Promise<{ ids: string[]; pages: number }> {
    const ids: string[] = [];
    let pages = 0;
    let last: Last | undefined;
    for (;;) {
      const page = await pageOf(grants, params, last);
      if (page.length === 0) return { ids, pages };
      pages++;
      ids.push(...page.map((doc) => doc.resourceId));
      const end = page.at(-1)!;
      last = 'id' in end ? { sortDate: new Date(end.sortDate), _id: end.id } : end;
      const stored = (await observations.findOne({ _id: last._id }))!;
      await arrive(stored);
    }
  }

  async function everything(grants: Grants, params: SearchParams): Promise<string[]> {
    const filter = observationFilter(CONNECTION_A, grants, params, NOW, AS_OF);
    return (await observations.find(filter).sort(observationSort(params.sort)).toArray()).map((doc) => doc.resourceId);
  }

  const ASCENDING = [
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

  it('walks oldest first: every match once, in order, none of the new arrivals', async () => {
    const { ids, pages } = await walk(ALL, { sort: 'date' });
    expect(ids).to.deep.equal(ASCENDING);
    expect(pages).to.equal(Math.ceil(ASCENDING.length / PAGE_SIZE));
  });

  it('walks newest first the same way', async () => {
    const { ids } = await walk(ALL, { sort: '-date' });
    expect(ids).to.deep.equal([...ASCENDING].reverse());
  });

  it('walks the index the same way, in both directions', async () => {
    expect((await walk(ALL, { sort: 'date' }, fromIndex)).ids).to.deep.equal(ASCENDING);
    expect((await walk(ALL, { sort: '-date' }, fromIndex)).ids).to.deep.equal([...ASCENDING].reverse());
    const grants: Grants = { ...ALL, sensitivity: ['HIV'], confidentiality: ['N', 'R'] };
    const expected = ['o19', 'o20', 'o13', 'o05', 'o06', 'o07', 'o31', 'o08', 'o11', 'o10', 'o27', 'o26'];
    expect(
      (await walk(grants, { category: 'laboratory', date: ['ge2021'], sort: 'date' }, fromIndex)).ids,
    ).to.deep.equal(expected);
  });

  it('walks a filtered search in both directions, as one query would return it', async () => {
    const grants: Grants = { ...ALL, sensitivity: ['HIV'], confidentiality: ['N', 'R'] };
    const params = { category: 'laboratory', date: ['ge2021'] };
    const expected = ['o19', 'o20', 'o13', 'o05', 'o06', 'o07', 'o31', 'o08', 'o11', 'o10', 'o27', 'o26'];
    expect(await everything(grants, { ...params, sort: 'date' })).to.deep.equal(expected);
    expect((await walk(grants, { ...params, sort: 'date' })).ids).to.deep.equal(expected);
    expect((await walk(grants, { ...params, sort: '-date' })).ids).to.deep.equal([...expected].reverse());
  });

  it('positions strictly after the last item, ties broken by id', async () => {
    const tie = FIXTURES.find((doc) => doc._id === `${CONNECTION_A}/o05`)!;
    const position = { sortDate: tie.sortDate, id: tie._id };
    const filter = observationFilter(CONNECTION_A, ALL, { sort: 'date' }, NOW, AS_OF);
    const next = (sort: SearchParams['sort']) =>
      observations
        .find({ $and: [filter, afterPosition(sort, position)] })
        .sort(observationSort(sort))
        .limit(4)
        .toArray();
    expect((await next('date')).map((doc) => doc.resourceId)).to.deep.equal(['o06', 'o07', 'o31', 'o08']);
    expect((await next('-date')).map((doc) => doc.resourceId)).to.deep.equal(['o04', 'o03', 'o28', 'o13']);
  });
});
