// The snapshot store on the real database: immutable versions, atomic activation, retention, diffs, and
// brand ids that survive re-publication.
import { expect } from 'chai';
import { TestApi } from '../../../testkit/api.js';
import { publishTo, realSource, realSources } from '../../../testkit/catalog.js';
import type { CatalogBrand } from '#core/catalog/model.js';

const brand = (id: string, name: string): CatalogBrand => ({
  id,
  name,
  aliases: [],
  platformType: 'OTHER',
  fhirBaseUrl: `https://${id}.example/fhir`,
  city: null,
  state: null,
  portalUrl: null,
  logo: null,
});

describe('catalog: snapshot store', () => {
  let api: TestApi;
  before(async () => {
    api = await TestApi.start();
  });
  after(() => api.close());

  const ref = (name: string) => ({ namespace: 'tests', name });

  it('stores a snapshot larger than one chunk and loads it back intact', async () => {
    const brands = Array.from({ length: 2345 }, (_, i) => brand(`b${String(i).padStart(5, '0')}`, `Brand ${i}`));
    const { header, created } = await api.services.snapshots.write(ref('big'), brands);
    expect(created).to.equal(true);
    expect(header).to.include({ brandCount: 2345, chunkCount: 3, catalog: 'tests/big' });
    const loaded = await api.services.snapshots.load(header.id);
    expect(loaded!.brands).to.deep.equal(brands);
  });

  it('reuses the latest snapshot when the content is the same, in any order', async () => {
    const brands = [brand('b1', 'One'), brand('b2', 'Two')];
    const first = await api.services.snapshots.write(ref('same'), brands);
    const second = await api.services.snapshots.write(ref('same'), [...brands].reverse());
    expect(second.created).to.equal(false);
    expect(second.header.id).to.equal(first.header.id);
  });

  it('moves the active pointer only from the expected snapshot (one winner among racing publishers)', async () => {
    const store = api.services.snapshots;
    const a = (await store.write(ref('race'), [brand('b1', 'A')])).header.id;
    const b = (await store.write(ref('race'), [brand('b1', 'B')])).header.id;
    const c = (await store.write(ref('race'), [brand('b1', 'C')])).header.id;
    const firsts = await Promise.all([store.activate(ref('race'), a, null), store.activate(ref('race'), b, null)]);
    expect(firsts.filter(Boolean)).to.have.length(1);
    const winner = (await store.active(ref('race')))!.snapshotId;
    const moves = await Promise.all([
      store.activate(ref('race'), c, winner),
      store.activate(ref('race'), winner === a ? b : a, winner),
    ]);
    expect(moves.filter(Boolean)).to.have.length(1);
    expect(await store.activate(ref('race'), c, 'not-the-active-one')).to.equal(false);
  });

  it('refuses to activate a snapshot of another catalog', async () => {
    const other = (await api.services.snapshots.write(ref('other'), [brand('b1', 'X')])).header.id;
    let error: unknown;
    await api.services.snapshots.activate(ref('mine'), other, null).catch((e: unknown) => (error = e));
    expect(String(error)).to.include('does not belong');
  });

  it('keeps the newest N snapshots and never prunes the active one', async () => {
    const store = api.services.snapshots;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await store.write(ref('prune'), [brand('b1', `V${i}`)])).header.id);
    await store.activate(ref('prune'), ids[0]!, null);
    const pruned = await store.prune(ref('prune'), 2);
    expect(pruned.sort()).to.deep.equal([ids[1], ids[2]].sort());
    expect((await store.list(ref('prune'))).map((h) => h.id).sort()).to.deep.equal([ids[0], ids[3], ids[4]].sort());
    expect(await store.load(ids[1]!)).to.equal(null);
  });

  it('diffs two snapshots into added, removed and changed brands', async () => {
    const store = api.services.snapshots;
    const from = (await store.write(ref('diff'), [brand('b1', 'One'), brand('b2', 'Two'), brand('b3', 'Three')])).header
      .id;
    const to = (await store.write(ref('diff'), [brand('b1', 'One'), brand('b2', 'Two, renamed'), brand('b4', 'Four')]))
      .header.id;
    expect(await store.diff(from, to)).to.deep.equal({ added: ['b4'], removed: ['b3'], changed: ['b2'] });
  });

  it('gives listed brands the same ids when their lists are published again, alone or with others', async () => {
    const oracleOnly = [
      realSource('oracle', 'fhir-endpoint-bundle', 'oracle-health/millennium_patient_r4_endpoints.json', 'CERNER', 10),
    ];
    await publishTo(api, oracleOnly);
    const first = await api.services.snapshots.load(
      (await api.services.snapshots.active(api.config.catalog))!.snapshotId,
    );
    const idsByUrl = new Map(first!.brands.map((b) => [b.fhirBaseUrl, b.id]));
    const report = await publishTo(api, realSources());
    expect(report.active).to.equal(true);
    expect(report.diff!.removed).to.deep.equal([]);
    const second = await api.services.snapshots.load(report.snapshot.id);
    for (const b of second!.brands) if (idsByUrl.has(b.fhirBaseUrl)) expect(b.id).to.equal(idsByUrl.get(b.fhirBaseUrl));
    expect(second!.brands.every((b) => /^[A-Za-z0-9_-]{1,64}$/.test(b.id))).to.equal(true);
  });

  it('holds back a snapshot whose brand count collapses (BrandCountDrop) and keeps serving the old one', async () => {
    await publishTo(api, realSources());
    const before = (await api.services.snapshots.active(api.config.catalog))!.snapshotId;
    const tiny = [
      realSource('hl7-example', 'smart-brands-bundle', 'smart-app-launch-examples/Bundle-example1.json', 'OTHER'),
    ];
    const report = await publishTo(api, tiny, 50);
    expect(report.active).to.equal(false);
    expect(report.stalled?.reason).to.equal('BrandCountDrop');
    expect((await api.services.snapshots.active(api.config.catalog))!.snapshotId).to.equal(before);
    expect(api.services.activeCatalog.get()!.snapshotId).to.equal(before);
  });
});
