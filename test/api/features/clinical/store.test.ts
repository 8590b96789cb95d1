// RecordStore's behaviour, held the same for the MongoDB repository (on the embedded database: bundles
// under generations, replacements applied after the answer) and for the in-memory fake (docs/architecture.md,
// "Stores and fakes"): upserts by id within a connection, counting new and replaced; pages of what the gateway's
// filter keeps (docs/api.md, "Clinical records and the observation gateway"), built here by its own query builder,
// the only filters the fake reads; and every observation of a connection as its last bundle left it.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { BEGINNING } from '../../../../api/src/features/clinical/dates.js';
import type { ObservationDocument } from '../../../../api/src/features/clinical/records/document.js';
import { FakeRecordStore } from '../../../../api/src/features/clinical/records/fake-store.js';
import {
  afterPosition,
  observationFilter,
  observationSort,
  type Grants,
  type SearchParams,
} from '../../../../api/src/features/clinical/gateway/query.js';
import {
  validateBundle,
  type NormalizedObservation,
} from '../../../../api/src/features/clinical/ingest/observations.js';
import {
  RecordRepository,
  type IngestTarget,
  type RecordStore,
} from '../../../../api/src/features/clinical/records/store.js';
import {
  confidentiality,
  glucose,
  heartRate,
  hemoglobin,
  observationBundle,
  sensitivity,
} from '../../../../testkit/observations.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';
import { withTestDatabase, type TestDatabase } from '../../../../testkit/database.js';
import { documentLocksFor } from '#core/infra/locks.js';
import { documentRow, foldBundles, type ObservationRow } from '../../../../api/src/features/clinical/records/rows.js';
import { KEPT_MS } from '../../../../api/src/features/clinical/records/head-document.js';
import {
  CHECKPOINT_CLAIMS,
  CHECKPOINT_PARTS,
  CheckpointStore,
} from '../../../../api/src/features/clinical/records/checkpoints.js';
import { ConnectionIndex } from '../../../../api/src/features/clinical/gateway/connection-index.js';
import {
  ConnectionIndexes,
  type IndexSource,
} from '../../../../api/src/features/clinical/gateway/connection-indexes.js';

// When the cases' bundles are written, minutes apart, and the repository's clock then: a bundle written long before
// its clock's now would be tidied away at once after the next commit (KEPT_MS), which is not what these cases are.
const T1 = new Date('2026-01-31T10:00:00.000Z');
const T2 = new Date('2026-01-31T10:05:00.000Z');
const T3 = new Date('2026-01-31T10:10:00.000Z');
const CLOCK = new Date('2026-01-31T10:11:00.000Z');
/** The gateway's now (its look-back counts from it) and the start of a walk that began after every bundle. */
const NOW = new Date('2026-02-01T00:00:00.000Z');
const EVERYTHING: Grants = {
  loincCodes: ['*'],
  confidentiality: ['N', 'R'],
  sensitivity: ['HIV', 'PSY'],
  lookbackDays: null,
};

/** The observations of FHIR resources, as ingest hands them to the store. */
function normalized(resources: Record<string, unknown>[]): NormalizedObservation[] {
  const result = validateBundle(observationBundle(resources));
  if (!result.ok) throw new Error(`not a valid bundle: ${JSON.stringify(result.problems)}`);
  return result.observations;
}

/** The resource effective at `date` (a FHIR date or dateTime), or without an effective date. */
function effective(resource: Record<string, unknown>, date?: string): Record<string, unknown> {
  const { effectiveDateTime: _dateTime, effectivePeriod: _period, ...rest } = resource;
  return date === undefined ? rest : { ...rest, effectiveDateTime: date };
}

/** The document the store keeps of an observation first written at `first` and last at `at`. */
function stored(target: IngestTarget, o: NormalizedObservation, at: Date, first = at): Record<string, unknown> {
  return {
    _id: `${target.connectionId}/${o.resourceId}`,
    connectionId: target.connectionId,
    accountId: target.accountId,
    resourceId: o.resourceId,
    code: o.code,
    category: o.category,
    date: o.date,
    sortDate: o.date?.start ?? BEGINNING,
    confidentiality: o.confidentiality,
    sensitivity: o.sensitivity,
    resource: o.resource,
    ...(o.search && { search: o.search }),
    updatedAt: at,
    firstIngestedAt: first,
  };
}

/** A document without the repository's diagnosis fields (the generation that wrote it), which the fake has not. */
function shown(doc: ObservationDocument): Record<string, unknown> {
  const { seq: _seq, rev: _rev, ...rest } = doc;
  return rest;
}

/** The connection's observations as all() gives them, one each (its later copy, with the first's firstIngestedAt). */
async function current(store: RecordStore, connectionId: string): Promise<Record<string, unknown>[]> {
  const byId = new Map<string, ObservationDocument>();
  for await (const doc of store.all(connectionId)) {
    byId.set(doc._id, { ...doc, firstIngestedAt: byId.get(doc._id)?.firstIngestedAt ?? doc.firstIngestedAt });
  }
  return [...byId.values()].map(shown).sort((a, b) => ((a._id as string) < (b._id as string) ? -1 : 1));
}

/** What the store sorts an observation by: its date's start, or the beginning of time without one. */
const sortTime = (o: NormalizedObservation) => o.date?.start.getTime() ?? BEGINNING.getTime();

/** Rows by _id, each resource parsed (its text's layout is not part of the rows' meaning). */
const rowsById = (rows: Iterable<ObservationRow>) =>
  [...rows]
    .map((row) => ({ ...row, resource: JSON.parse(row.resource) as unknown }))
    .sort((a, b) => (a._id < b._id ? -1 : 1));

/** The connection as the gateway's index sees it when read whole from its documents. */
async function wholeRows(store: RecordStore, connectionId: string) {
  const rows = new Map<string, ObservationRow>();
  for await (const doc of store.all(connectionId)) {
    const row = documentRow(doc);
    rows.set(doc._id, { ...row, firstIngestedAt: rows.get(doc._id)?.firstIngestedAt ?? row.firstIngestedAt });
  }
  return rowsById(rows.values());
}

const byId = (docs: Record<string, unknown>[]) =>
  [...docs].sort((a, b) => ((a._id as string) < (b._id as string) ? -1 : 1));

describeStore<RecordStore, RecordRepository>(
  'clinical: observation stores',
  {
    mongo: {
      name: 'RecordRepository (MongoDB)',
      open: async ({ db }) => {
        const repository = new RecordRepository(db, await documentLocksFor(db), db, new ManualClock(CLOCK));
        await repository.init();
        return repository;
      },
      close: (repository) => repository.settled(),
    },
    fake: { name: 'FakeRecordStore', open: async () => new FakeRecordStore() },
  },
  ({ store, it }) => {
    let target: IngestTarget;
    beforeEach(() => {
      target = { accountId: randomUUID(), connectionId: randomUUID() };
    });

    /** Every page of a search, `limit` at a time, walking on from the last of each; and each page's total. */
    async function walk(params: SearchParams, limit: number, grants = EVERYTHING, asOf = NOW) {
      const filter = observationFilter(target.connectionId, grants, params, NOW, asOf);
      const pages: { ids: string[]; total: number }[] = [];
      let after: ReturnType<typeof afterPosition> | undefined;
      for (;;) {
        const { items, total } = await store().page(
          target.connectionId,
          filter,
          after,
          observationSort(params.sort),
          limit,
        );
        pages.push({ ids: items.map((doc) => doc.resourceId), total });
        const last = items.at(-1);
        if (items.length < limit || !last) return pages;
        after = afterPosition(params.sort, { sortDate: last.sortDate, id: last._id });
      }
    }

    it('upserts a bundle of new observations: all ingested, each stored with its search fields', async () => {
      const observations = normalized([heartRate(), glucose(), effective(hemoglobin())]);
      expect(await store().upsert(target, observations, T1)).to.deep.equal({ ingested: 3, updated: 0 });
      expect(await current(store(), target.connectionId)).to.deep.equal(
        byId(observations.map((o) => stored(target, o, T1))),
      );
    });

    it('keeps a resource as the database stores it: a property given as undefined is null', async () => {
      const observations = normalized([heartRate({ note: undefined, valueQuantity: { value: 72, unit: undefined } })]);
      await store().upsert(target, observations, T1);
      const [doc] = await current(store(), target.connectionId);
      expect(doc?.resource).to.deep.include({ note: null, valueQuantity: { value: 72, unit: null } });
    });

    it('writes nothing for an empty bundle', async () => {
      expect(await store().upsert(target, [], T1)).to.deep.equal({ ingested: 0, updated: 0 });
      expect(await current(store(), target.connectionId)).to.deep.equal([]);
      expect(await store().changes(target.connectionId, 0)).to.deep.equal({ gen: 0, bundles: [] }); // no generation
    });

    it('replaces by id in the connection, counting new and replaced, keeping when each was first written', async () => {
      const [a, b] = normalized([heartRate(), glucose()]) as [NormalizedObservation, NormalizedObservation];
      await store().upsert(target, [a, b], T1);
      const [b2, c] = normalized([effective(glucose({ id: b.resourceId }), '2025-06-01'), hemoglobin()]) as [
        NormalizedObservation,
        NormalizedObservation,
      ];
      expect(await store().upsert(target, [b2, c], T2)).to.deep.equal({ ingested: 1, updated: 1 });
      const expected = [stored(target, a, T1), stored(target, b2, T2, T1), stored(target, c, T2)];
      expect(await current(store(), target.connectionId)).to.deep.equal(byId(expected));
    });

    it('keeps connections apart: the same resource id in another connection is another observation', async () => {
      const [a] = normalized([heartRate()]) as [NormalizedObservation];
      const other = { accountId: target.accountId, connectionId: randomUUID() };
      expect(await store().upsert(target, [a], T1)).to.deep.equal({ ingested: 1, updated: 0 });
      expect(await store().upsert(other, [a], T2)).to.deep.equal({ ingested: 1, updated: 0 });
      expect(await current(store(), target.connectionId)).to.deep.equal([stored(target, a, T1)]);
      expect(await current(store(), other.connectionId)).to.deep.equal([stored(other, a, T2)]);
      expect(await current(store(), randomUUID())).to.deep.equal([]);
    });

    it('writes two bundles of one connection sent at once one after the other: one ingests, one replaces', async () => {
      const id = `obs-${randomUUID()}`;
      const [first, second] = [
        normalized([heartRate({ id })]),
        normalized([heartRate({ id, valueQuantity: { value: 90 } })]),
      ];
      const counts = await Promise.all([store().upsert(target, first, T1), store().upsert(target, second, T1)]);
      expect(counts).to.have.deep.members([
        { ingested: 1, updated: 0 },
        { ingested: 0, updated: 1 },
      ]);
      expect(await current(store(), target.connectionId)).to.have.length(1);
    });

    it('pages what the filter keeps in its order, after the keyset position of the last, with the total', async () => {
      const dates = ['2024-01-05', '2024-03-01', '2024-03-01', '2025-07-20', undefined];
      const observations = normalized(dates.map((date) => effective(heartRate(), date)));
      await store().upsert(target, observations, T1);
      await store().upsert({ accountId: target.accountId, connectionId: randomUUID() }, normalized([heartRate()]), T1);
      const ascending = [...observations]
        .sort((a, b) => sortTime(a) - sortTime(b) || (a.resourceId < b.resourceId ? -1 : 1))
        .map((o) => o.resourceId);
      const pages = await walk({ sort: 'date' }, 2);
      expect(pages.map((p) => p.ids)).to.deep.equal([ascending.slice(0, 2), ascending.slice(2, 4), ascending.slice(4)]);
      expect(pages.map((p) => p.total)).to.deep.equal([5, 5, 5]);
      const descending = await walk({ sort: '-date' }, 3);
      expect(descending.flatMap((p) => p.ids)).to.deep.equal([...ascending].reverse());
    });

    it('keeps what the grants allow and the parameters ask: codes, categories, dates, labels, look-back', async () => {
      const observations = normalized([
        effective(heartRate({ id: 'hr-old' }), '2023-05-01'),
        effective(heartRate({ id: 'hr-recent', meta: { security: [sensitivity('PSY')] } }), '2026-01-15'),
        effective(glucose({ id: 'glu', meta: { security: [confidentiality('R')] } }), '2025-03-10'),
        effective(hemoglobin({ id: 'hgb-hiv', meta: { security: [sensitivity('HIV')] } }), '2025-04-01'),
        effective(
          hemoglobin({ id: 'hgb-both', meta: { security: [sensitivity('HIV'), sensitivity('PSY')] } }),
          '2025-04-02',
        ),
        effective(glucose({ id: 'glu-undated' })),
      ]);
      await store().upsert(target, observations, T1);
      const found = async (params: Omit<SearchParams, 'sort'>, grants: Partial<Grants> = {}) =>
        (await walk({ ...params, sort: 'date' }, 100, { ...EVERYTHING, ...grants }))[0]!.ids.sort();
      expect(await found({})).to.have.length(6);
      expect(await found({ code: 'http://loinc.org|8867-4' })).to.deep.equal(['hr-old', 'hr-recent']);
      expect(await found({ code: '8867-4,http://loinc.org|' })).to.have.length(6);
      expect(await found({ category: 'laboratory' })).to.deep.equal(['glu', 'glu-undated', 'hgb-both', 'hgb-hiv']);
      expect(await found({ date: ['ge2025-01-01', 'lt2025-04-02'] })).to.deep.equal(['glu', 'hgb-hiv']);
      expect(await found({ date: ['ne2025'] })).to.deep.equal(['hr-old', 'hr-recent']);
      expect(await found({}, { confidentiality: ['N'] })).to.deep.equal([
        'glu-undated',
        'hgb-both',
        'hgb-hiv',
        'hr-old',
        'hr-recent',
      ]);
      expect(await found({}, { sensitivity: ['HIV'] })).to.deep.equal(['glu', 'glu-undated', 'hgb-hiv', 'hr-old']);
      expect(await found({}, { sensitivity: [] })).to.deep.equal(['glu', 'glu-undated', 'hr-old']);
      expect(await found({}, { loincCodes: ['8867-4'] })).to.deep.equal(['hr-old', 'hr-recent']);
      expect(await found({}, { lookbackDays: 30 })).to.deep.equal(['hr-recent']);
    });

    it('shows a bundle all or nothing to readers while it is written, new observations and replacements', async () => {
      const resources = Array.from({ length: 200 }, () => effective(heartRate(), '2024-01-01'));
      const seen = async (write: Promise<unknown>, params: Omit<SearchParams, 'sort'>): Promise<Set<number>> => {
        let written = false;
        void write.finally(() => (written = true)).catch(() => undefined);
        const totals = new Set<number>();
        const filter = observationFilter(target.connectionId, EVERYTHING, { ...params, sort: 'date' }, NOW, NOW);
        do totals.add((await store().page(target.connectionId, filter, undefined, observationSort('date'), 1)).total);
        while (!written);
        await write;
        totals.add((await store().page(target.connectionId, filter, undefined, observationSort('date'), 1)).total);
        return totals;
      };
      expect([...(await seen(store().upsert(target, normalized(resources), T1), {}))]).to.satisfy((totals: number[]) =>
        totals.every((total) => total === 0 || total === 200),
      );
      const moved = resources.map((resource) => effective(resource, '2025-01-01'));
      const totals = await seen(store().upsert(target, normalized(moved), T2), { date: ['eq2025-01-01'] });
      expect(
        [...totals].every((total) => total === 0 || total === 200),
        `totals seen: ${[...totals].join(', ')}`,
      ).to.equal(true);
      expect(totals).to.include(200);
    });

    it('tells what the bundles after a generation wrote, in order, and checkpoints the connection as it reads', async () => {
      const [a, b] = normalized([heartRate(), glucose()]) as [NormalizedObservation, NormalizedObservation];
      await store().upsert(target, [a, b], T1);
      const [b2, c] = normalized([effective(glucose({ id: b.resourceId }), '2025-06-01'), hemoglobin()]);
      await store().upsert(target, [b2!, c!], T2);
      const changes = (await store().changes(target.connectionId, 0))!;
      expect(changes.gen).to.equal(2);
      expect(
        changes.bundles.map((bundle) => [bundle.gen, bundle.at, bundle.rows.map((r) => r.resourceId)]),
      ).to.deep.equal([
        [1, T1.getTime(), [a.resourceId, b.resourceId]],
        [2, T2.getTime(), [b.resourceId, c!.resourceId]],
      ]);
      const whole = await wholeRows(store(), target.connectionId);
      expect(rowsById(foldBundles([], changes.bundles).values())).to.deep.equal(whole);
      expect((await store().changes(target.connectionId, 1))!.bundles.map((bundle) => bundle.gen)).to.deep.equal([2]);
      expect(await store().changes(randomUUID(), 0)).to.deep.equal({ gen: 0, bundles: [] });

      // (The repository may have checkpointed the first bundle already: its clock says it was applied a while ago.)
      await store().writeCheckpoint(target.connectionId);
      const checkpoint = (await store().checkpoint(target.connectionId)) as { gen: number; rows: ObservationRow[] };
      expect(checkpoint.gen).to.equal(2);
      expect(rowsById(checkpoint.rows)).to.deep.equal(whole);
      await store().upsert(target, normalized([heartRate()]), T3);
      const after = (await store().changes(target.connectionId, checkpoint.gen))!;
      expect([after.gen, after.bundles.map((bundle) => bundle.gen)]).to.deep.equal([3, [3]]);
      const rows = foldBundles(checkpoint.rows, after.bundles);
      expect(rowsById(rows.values())).to.deep.equal(await wholeRows(store(), target.connectionId));
    });

    it('removes what a full sync did not write again: no reader shows it, and a later write brings it back', async () => {
      const [a, b, c] = normalized([heartRate(), glucose(), hemoglobin()]);
      await store().upsert(target, [a!, b!, c!], T1);
      const other = { accountId: target.accountId, connectionId: randomUUID() };
      await store().upsert(other, [a!], T1);
      // The run began at T2 and wrote `a` again; `b` and `c` were not returned.
      await store().upsert(target, [a!], T2);
      const bundles: [string, number][][] = [];
      const removed = await store().removeStale(target, ['Observation'], T2, T3, async (counts) => {
        bundles.push([...counts]);
      });
      expect([...removed]).to.deep.equal([['Observation', 2]]);
      expect(bundles, 'counted as each bundle commits').to.deep.equal([[['Observation', 2]]]);
      expect((await walk({ sort: 'date' }, 10)).flatMap((p) => p.ids)).to.deep.equal([a!.resourceId]);
      expect((await walk({ sort: 'date' }, 10))[0]!.total).to.equal(1);
      // Bundles and checkpoints carry the removal: the index built from them holds what a whole read holds.
      const changes = (await store().changes(target.connectionId, 0))!;
      expect([...foldBundles([], changes.bundles).keys()]).to.deep.equal([`${target.connectionId}/${a!.resourceId}`]);
      const built = await ConnectionIndex.build(store().all(target.connectionId), Number.MAX_SAFE_INTEGER);
      expect(built!.size).to.equal(1);
      await store().writeCheckpoint(target.connectionId);
      const checkpoint = (await store().checkpoint(target.connectionId)) as { rows: ObservationRow[] };
      expect(checkpoint.rows.map((row) => row.resourceId)).to.deep.equal([a!.resourceId]);
      // Another connection, and a type not named, keep theirs; nothing is removed twice.
      expect(await current(store(), other.connectionId)).to.have.length(1);
      expect([...(await store().removeStale(target, ['Condition'], T3, T3))]).to.deep.equal([]);
      expect([...(await store().removeStale(target, ['Observation'], T2, T3))]).to.deep.equal([]);
      // Written again, it is back, whole (the tombstone's mark gone), and new again.
      expect(await store().upsert(target, [b!], T3)).to.deep.equal({ ingested: 1, updated: 0 });
      expect(await store().upsert(target, [b!], T3), 'then replaced as any').to.deep.equal({ ingested: 0, updated: 1 });
      await store().changes(target.connectionId, 0); // (the repository applies the replacement before it answers)
      expect((await walk({ sort: 'date' }, 10)).flatMap((p) => p.ids)).to.have.members([a!.resourceId, b!.resourceId]);
      const docs = await current(store(), target.connectionId);
      expect(docs.filter((doc) => doc.removed).map((doc) => doc.resourceId)).to.deep.equal([c!.resourceId]);
      expect(docs.find((doc) => doc.resourceId === b!.resourceId)!.resource).to.deep.equal(b!.resource);
    });

    it('keeps a paging walk to what was ingested by its start, replacements of it included', async () => {
      const [early] = normalized([effective(heartRate(), '2024-01-01')]) as [NormalizedObservation];
      await store().upsert(target, [early], T1);
      await store().upsert(target, normalized([effective(heartRate(), '2024-02-01')]), T3);
      const [replaced] = normalized([effective(heartRate({ id: early.resourceId }), '2024-06-01')]);
      await store().upsert(target, [replaced!], T3);
      const filter = observationFilter(target.connectionId, EVERYTHING, { sort: 'date' }, NOW, T2);
      const { items, total } = await store().page(target.connectionId, filter, undefined, observationSort('date'), 10);
      expect(total).to.equal(1);
      expect(items.map(shown)).to.deep.equal([stored(target, replaced!, T3, T1)]);
    });
  },
);

describe('clinical: a connection’s head under its own background work (MongoDB)', () => {
  let database: TestDatabase | undefined;
  withTestDatabase((opened) => (database = opened));

  // Bundles written more than KEPT_MS before the clock's now: every commit tidies the previous bundle in the
  // background, a write to the head that races the next bundle's lease. On the embedded database a conditional
  // write is a read and then a whole-document write, so without the head's lock one undoes the other: the next
  // bundle lost its lease at once (503), or a commit could be undone.
  it('keeps every lease and commit while each commit tidies the last bundle', async () => {
    const { db } = database!;
    const repository = new RecordRepository(db, await documentLocksFor(db), db, new ManualClock(NOW));
    const target = { accountId: randomUUID(), connectionId: randomUUID() };
    const resource = heartRate();
    for (let bundle = 1; bundle <= 30; bundle++) {
      const at = new Date(T1.getTime() + bundle * 1000);
      expect(await repository.upsert(target, normalized([effective({ ...resource }, '2024-01-01')]), at)).to.deep.equal(
        bundle === 1 ? { ingested: 1, updated: 0 } : { ingested: 0, updated: 1 },
      );
    }
    await repository.settled();
    expect((await repository.heads.visibility(target.connectionId)).committed).to.equal(30);
  });

  it('checkpoints a connection before it forgets the records of its bundles, and replaces the checkpoint whole', async () => {
    const { db } = database!;
    const clock = new ManualClock(T1);
    const locks = await documentLocksFor(db);
    const repository = new RecordRepository(db, locks, db, clock);
    const target = { accountId: randomUUID(), connectionId: randomUUID() };
    await repository.upsert(target, normalized([heartRate(), glucose()]), T1);
    await repository.upsert(target, normalized([hemoglobin()]), T2);
    await repository.settled();
    const whole = await wholeRows(repository, target.connectionId);
    clock.advance(T2.getTime() - T1.getTime() + KEPT_MS + 60_000);
    await repository.tidy(target.connectionId);
    expect(await repository.changes(target.connectionId, 0)).to.equal(null); // the records are gone
    const checkpoint = (await repository.checkpoint(target.connectionId)) as { gen: number; rows: ObservationRow[] };
    expect(checkpoint.gen).to.equal(2);
    expect(rowsById(checkpoint.rows)).to.deep.equal(whole);
    expect(await repository.changes(target.connectionId, 2)).to.deep.equal({ gen: 2, bundles: [] });

    // Two replicas checkpoint the next bundle at once: one checkpoint, its parts alone left.
    await repository.upsert(target, normalized([heartRate()]), clock.now());
    const other = new RecordRepository(db, locks, db, clock);
    await Promise.all([repository.writeCheckpoint(target.connectionId), other.writeCheckpoint(target.connectionId)]);
    const next = (await other.checkpoint(target.connectionId)) as { gen: number; rows: ObservationRow[] };
    expect(next.gen).to.equal(3);
    expect(rowsById(next.rows)).to.deep.equal(await wholeRows(repository, target.connectionId));
    const parts = await db.collection(CHECKPOINT_PARTS).find({ connectionId: target.connectionId }).toArray();
    // One writer's parts alone (each writer's carry its own id).
    expect(parts.map((part) => part._id)).to.have.length(1);
    expect(parts[0]!._id).to.match(new RegExp(`^${target.connectionId}@3\\.[0-9a-f-]{36}#0$`));
    await repository.settled();
  });

  it('leaves a generation another writer claimed to it, and takes over the claim of a writer that stopped', async () => {
    const { db } = database!;
    const locks = await documentLocksFor(db);
    const checkpoints = new CheckpointStore(db, locks);
    const target = { accountId: randomUUID(), connectionId: randomUUID() };
    const { connectionId } = target;
    const repository = new RecordRepository(db, locks, db, new ManualClock(T2));
    await repository.upsert(target, normalized([heartRate(), glucose()]), T1);
    await repository.settled();
    const rows: ObservationRow[] = [];
    for await (const doc of repository.all(connectionId)) rows.push(documentRow(doc));
    const claims = db.collection<{ _id: string; writer: string; at: Date }>(CHECKPOINT_CLAIMS);
    await claims.insertOne({ _id: `${connectionId}@1`, writer: 'another replica', at: new Date() });
    expect(await checkpoints.save(connectionId, 1, { rows }, 1e9)).to.equal(false);
    expect(await checkpoints.manifest(connectionId)).to.equal(null);
    expect(await db.collection(CHECKPOINT_PARTS).countDocuments({ connectionId })).to.equal(0);
    // Claimed long ago: its writer stopped.
    await claims.updateOne({ _id: `${connectionId}@1` }, { $set: { at: new Date(Date.now() - 6 * 60_000) } });
    expect(await checkpoints.save(connectionId, 1, { rows }, 1e9)).to.equal(true);
    const loaded = (await checkpoints.load(connectionId)) as { gen: number; rows: ObservationRow[] };
    expect(loaded.gen).to.equal(1);
    expect(rowsById(loaded.rows)).to.deep.equal(rowsById(rows));
    expect(await claims.countDocuments({ _id: `${connectionId}@1` })).to.equal(0); // released
  });

  it('gives a starting replica the index a whole read gives, from the checkpoint and the records after it', async () => {
    const { db } = database!;
    const repository = new RecordRepository(db, await documentLocksFor(db), db, new ManualClock(T3));
    const target = { accountId: randomUUID(), connectionId: randomUUID() };
    const first = normalized([effective(heartRate(), '2024-01-01'), glucose(), effective(hemoglobin(), '2025-03-01')]);
    await repository.upsert(target, first, T1);
    await repository.upsert(target, normalized([heartRate(), glucose({ id: first[1]!.resourceId })]), T2);
    await repository.writeCheckpoint(target.connectionId);
    await repository.upsert(
      target,
      normalized([effective(hemoglobin({ id: first[2]!.resourceId }), '2025-04-01')]),
      T3,
    );
    await repository.settled();
    const reads: string[] = [];
    const source: IndexSource = {
      all: (id) => (reads.push('all'), repository.all(id)),
      changes: (id, after) => (reads.push(`changes ${after}`), repository.changes(id, after)),
      checkpoint: (id) => (reads.push('checkpoint'), repository.checkpoint(id)),
      writeCheckpoint: (id) => repository.writeCheckpoint(id),
    };
    const loaded = (await new ConnectionIndexes(source, 1e9).get(target.connectionId, 't'))!;
    expect(reads).to.deep.equal(['checkpoint', 'changes 2']);
    const whole = (await ConnectionIndex.build(repository.all(target.connectionId), 1e9))!;
    for (const sort of ['date', '-date'] as const)
      for (const asOf of [T1, T2, NOW])
        expect(loaded.search(EVERYTHING, { sort }, NOW, asOf, undefined, 100)).to.deep.equal(
          whole.search(EVERYTHING, { sort }, NOW, asOf, undefined, 100),
        );
    expect(loaded.size).to.equal(4);
  });

  it('marks a connection too large to checkpoint, and keeps nothing of it', async () => {
    const { db } = database!;
    const repository = new RecordRepository(db, await documentLocksFor(db), db, new ManualClock(T2), undefined, 100);
    const target = { accountId: randomUUID(), connectionId: randomUUID() };
    await repository.upsert(target, normalized([heartRate(), glucose()]), T1);
    await repository.writeCheckpoint(target.connectionId);
    expect(await repository.checkpoint(target.connectionId)).to.deep.include({ gen: 1, oversized: true });
    expect(await db.collection(CHECKPOINT_PARTS).countDocuments({ connectionId: target.connectionId })).to.equal(0);
    // A larger budget (it was raised) reads it again.
    const larger = new RecordRepository(db, await documentLocksFor(db), db, new ManualClock(T2), undefined, 1e9);
    await larger.writeCheckpoint(target.connectionId);
    const checkpoint = (await larger.checkpoint(target.connectionId)) as { gen: number; rows: ObservationRow[] };
    expect(checkpoint.gen).to.equal(1);
    expect(rowsById(checkpoint.rows)).to.deep.equal(await wholeRows(larger, target.connectionId));
    await repository.settled();
  });
});
