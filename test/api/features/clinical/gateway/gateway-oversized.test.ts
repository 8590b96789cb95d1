// A connection too large for the gateway's per-replica index is searched in the database instead, over HTTP:
// the same answers, byte for byte, as a replica that indexes it, and a walk by `next` links that returns every
// visible observation once. The replica under test has PORTICO_GATEWAY_INDEX_MB=1, so a connection whose
// index would take more than a quarter of that is not indexed (connection-index.ts); the test checks that
// this connection is such a one before relying on it.
import { expect } from 'chai';
import { RecordRepository } from '../../../../../api/src/features/clinical/records/store.js';
import { ConnectionIndex } from '../../../../../api/src/features/clinical/gateway/connection-index.js';
import { TestApi, type Tenant } from '../../../../../testkit/api.js';
import { appOf, connectionOf, GRANTS, type AppKeys } from '../../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../../testkit/catalog.js';
import { manyObservations, observationBundle } from '../../../../../testkit/observations.js';
import { documentLocksFor } from '#core/infra/locks.js';

const SEARCH = '/api/sdk/v1/observations/_search';
const OBSERVATIONS = 1_000;

describe('sdk: the observation gateway, a connection too large for the index', function () {
  this.timeout(180_000);
  let database: TestApi; // PORTICO_GATEWAY_INDEX_MB=1: searches this connection in the database
  let indexed: TestApi; // the default budget: searches it in its index
  let tenant: Tenant;
  let app: AppKeys;
  let connectionId: string;

  before(async () => {
    database = await TestApi.start({ env: { PORTICO_GATEWAY_INDEX_MB: '1' } });
    indexed = await TestApi.start({ replicaOf: database });
    await publishTo(database, realSources());
    const brandId = database.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    tenant = await database.tenant();
    app = await appOf(database, tenant, { ...GRANTS, confidentiality: ['N', 'R'], sensitivity: ['HIV', 'PSY'] });
    connectionId = await connectionOf(database, tenant, app, 'patient-oversized', brandId);
    const res = await database.request('POST', `/api/platform/v1/connections/${connectionId}/observations`, {
      key: tenant.key,
      body: observationBundle(manyObservations(OBSERVATIONS)),
    });
    expect(res.status, res.text).to.equal(200);
  });
  after(async () => {
    await indexed?.close();
    await database?.close();
  });

  const search = (api: TestApi, body: Record<string, unknown>) =>
    api.request('POST', SEARCH, { key: app.ak, body: { connectionId, ...body } });
  /**
   * The answer without what differs by replica and moment: the origin it was asked at (fullUrl and links name
   * the replica's own port) and the links' signed cursors (they carry the moment the search began).
   */
  const portable = (api: TestApi, text: string) =>
    text.replaceAll(api.url, '<origin>').replace(/cursor=[\w.-]+/g, 'cursor=…');

  it('is a connection whose index exceeds the replica’s per-connection budget (a quarter of 1 MiB)', async () => {
    const observations = new RecordRepository(
      database.mongo.db,
      await documentLocksFor(database.mongo.db),
      database.mongo.longDb,
    );
    expect(await ConnectionIndex.build(observations.all(connectionId), (1024 * 1024) / 4)).to.equal(null);
    expect(await ConnectionIndex.build(observations.all(connectionId), 64 * 1024 * 1024)).to.not.equal(null);
  });

  for (const [name, query] of [
    ['everything, newest first', {}],
    ['a code', { code: 'http://loinc.org|8867-4', _count: 20 }],
    ['a date range, oldest first', { date: ['ge2024-03-01', 'lt2024-03-05'], _sort: 'date', _count: 100 }],
    ['a category and codes', { category: 'laboratory', code: '2339-0,4548-4' }],
  ] as const) {
    it(`answers ${name} exactly as a replica that indexes it`, async () => {
      const [fromDatabase, fromIndex] = [await search(database, query), await search(indexed, query)];
      expect(fromDatabase.status, fromDatabase.text).to.equal(200);
      expect(fromIndex.status, fromIndex.text).to.equal(200);
      expect(portable(database, fromDatabase.text)).to.equal(portable(indexed, fromIndex.text));
    });
  }

  it('walks every visible observation once by the next links', async () => {
    const seen: string[] = [];
    let res = await search(database, { _count: 100 });
    const total = res.body.total as number;
    expect(total).to.equal(OBSERVATIONS);
    for (let page = 0; ; page++) {
      expect(res.status, res.text).to.equal(200);
      seen.push(...(res.body.entry as { resource: { id: string } }[]).map((entry) => entry.resource.id));
      const next = (res.body.link as { relation: string; url: string }[]).find((link) => link.relation === 'next');
      if (!next) break;
      expect(page, 'pages').to.be.below(OBSERVATIONS / 100);
      res = await database.request('GET', next.url.slice(database.url.length), { key: app.ak });
    }
    expect(seen).to.have.length(total);
    expect(new Set(seen).size).to.equal(total);
  });
});
