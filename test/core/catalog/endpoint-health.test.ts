// The endpoint health store on the real (embedded) database: whole publications or none, chunked, the one
// before the previous deleted, one winner among racing publishers, leftovers of a publisher that stopped
// halfway removed, and everything of a deleted catalog gone.
import { expect } from 'chai';
import { EndpointHealthStore, HEALTH_CHUNK_ROWS, HealthPublishConflictError } from '#core/catalog/endpoint-health.js';
import type { EndpointHealth } from '#core/catalog/model.js';
import { systemClock } from '#core/clock.js';
import { withTestDatabase, type TestDatabase } from '../../../testkit/database.js';

const up = (at: string): EndpointHealth => ({
  status: 'UP',
  fhirVersion: '4.0.1',
  smartConfiguration: true,
  checkedAt: at,
});
const down = (at: string): EndpointHealth => ({
  status: 'DOWN',
  fhirVersion: null,
  smartConfiguration: false,
  checkedAt: at,
});

describe('catalog: endpoint health store', function () {
  this.timeout(60_000);
  let database: TestDatabase;
  withTestDatabase((d) => (database = d));
  const store = () => new EndpointHealthStore(database.db, database.locks, systemClock);
  const ref = (name: string) => ({ namespace: 'tests', name });
  const chunkIds = async (name: string) =>
    (
      await database.db
        .collection<{ _id: string; catalog: string }>('catalog_endpoint_health_chunks')
        .find({ catalog: `tests/${name}` })
        .toArray()
    )
      .map((c) => c._id)
      .sort();

  it('publishes outcomes by brand id and reads them back as the API presents them, UNKNOWN left out', async () => {
    const at = '2026-03-01T10:00:00.000Z';
    const health = new Map<string, EndpointHealth>([
      ['b1', up(at)],
      ['b2', down(at)],
      ['b3', { status: 'DEGRADED', fhirVersion: null, smartConfiguration: true, checkedAt: at }],
      ['b4', { status: 'UNKNOWN', fhirVersion: null, smartConfiguration: false, checkedAt: null }],
    ]);
    const pointer = await store().publish(ref('basic'), health, [['b1', 'operator state']], null);
    expect(pointer).to.deep.include({ brands: 3, counts: { UP: 1, DEGRADED: 1, DOWN: 1, UNKNOWN: 1 } });
    const loaded = await store().load(ref('basic'));
    expect(loaded).to.not.equal(null).and.not.equal('unchanged');
    const published = loaded as Exclude<typeof loaded, null | 'unchanged'>;
    expect(published.version).to.equal(pointer.version);
    expect([...published.health.entries()]).to.deep.equal([...health.entries()].slice(0, 3));
    expect(Object.isFrozen(published.health.get('b1'))).to.equal(true);
    expect(await store().load(ref('basic'), pointer.version)).to.equal('unchanged');
    expect((await store().loadWithState(ref('basic')))!.state).to.deep.equal([['b1', 'operator state']]);
    expect(await store().load(ref('never-published'))).to.equal(null);
  });

  it(`splits a large catalog into chunks of ${HEALTH_CHUNK_ROWS} rows and loads it whole`, async () => {
    const at = new Date().toISOString();
    const health = new Map(
      Array.from({ length: 12_345 }, (_, i) => [`brand-${i}`, i % 3 === 0 ? down(at) : up(at)] as const),
    );
    const state = Array.from({ length: 12_345 }, (_, i) => [
      `brand-${i}`,
      [1, 'ok', null, '4.0.1', `"etag-${i}"`, null],
    ]);
    const { version } = await store().publish(ref('large'), health, state, null);
    expect(await chunkIds('large')).to.have.length(6); // 3 public, 3 state
    const loaded = await store().loadWithState(ref('large'));
    expect(loaded!.version).to.equal(version);
    expect(loaded!.health.size).to.equal(12_345);
    expect(loaded!.health.get('brand-9')).to.deep.equal(down(at));
    expect(loaded!.state).to.deep.equal(state);
  });

  it('keeps the current and the previous publication, deleting older ones by _id', async () => {
    const versions: string[] = [];
    for (let i = 0; i < 4; i++) {
      const pointer = await store().publish(
        ref('chain'),
        new Map([['b1', up(new Date(Date.UTC(2026, 0, 1, i)).toISOString())]]),
        [],
        versions.at(-1) ?? null,
      );
      versions.push(pointer.version);
    }
    const remaining = new Set((await chunkIds('chain')).map((id) => id.split('@')[1]!.split('/')[0]));
    expect([...remaining].sort()).to.deep.equal(versions.slice(2).sort());
    expect(
      ((await store().load(ref('chain'))) as { health: Map<string, EndpointHealth> }).health.get('b1')!.checkedAt,
    ).to.equal('2026-01-01T03:00:00.000Z');
  });

  it('lets one of two racing publishers win; the loser leaves nothing behind', async () => {
    const first = await store().publish(ref('race'), new Map([['b1', up(new Date().toISOString())]]), [], null);
    const outcomes = await Promise.allSettled(
      [0, 1].map((i) =>
        store().publish(
          ref('race'),
          new Map([['b1', i ? up(new Date().toISOString()) : down(new Date().toISOString())]]),
          [],
          first.version,
        ),
      ),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).to.have.length(1);
    const lost = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).to.be.instanceOf(HealthPublishConflictError);
    expect(
      await store()
        .publish(ref('race'), new Map(), [], 'stale-version')
        .catch((e: unknown) => e),
    ).to.be.instanceOf(HealthPublishConflictError);
    const current = (await store().pointer(ref('race')))!.version;
    const versions = new Set((await chunkIds('race')).map((id) => id.split('@')[1]!.split('/')[0]));
    expect([...versions].sort()).to.deep.equal([first.version, current].sort());
  });

  it('removes chunks no pointer names (a publisher that stopped halfway), and a deleted catalog entirely', async () => {
    const { version } = await store().publish(
      ref('orphans'),
      new Map([['b1', up(new Date().toISOString())]]),
      [['b1']],
      null,
    );
    await database.db.collection('catalog_endpoint_health_chunks').insertOne({
      _id: 'tests/orphans@zzz-000000/h0' as never,
      catalog: 'tests/orphans',
      version: 'zzz-000000',
      rows: '[]',
    });
    expect(await store().deleteOrphans(ref('orphans'))).to.equal(1);
    expect(await chunkIds('orphans')).to.deep.equal([`tests/orphans@${version}/h0`, `tests/orphans@${version}/s0`]);
    await store().deleteCatalog(ref('orphans'));
    expect(await store().pointer(ref('orphans'))).to.equal(null);
    expect(await chunkIds('orphans')).to.deep.equal([]);
  });
});
