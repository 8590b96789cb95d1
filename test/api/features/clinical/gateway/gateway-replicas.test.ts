// The gateway across replicas: each replica keeps its own index of a connection, and a change made on one
// replica (an ingest, new grants, a revoke, a tombstone) applies to the very next search on the other: no
// waiting. A search for a connection the caller may not read leaves no generation token behind.
import { expect } from 'chai';
import { TestApi, type Tenant } from '../../../../../testkit/api.js';
import { appOf, connectionOf, GRANTS, type AppKeys } from '../../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../../testkit/catalog.js';
import { glucose, heartRate, observationBundle } from '../../../../../testkit/observations.js';

const SEARCH = '/api/sdk/v1/observations/_search';

describe('sdk: the observation gateway across replicas', () => {
  let primary: TestApi;
  let replica: TestApi;
  let tenant: Tenant;
  let app: AppKeys;
  let connectionId: string;
  let brandId: string;

  before(async () => {
    primary = await TestApi.start({ redis: true });
    replica = await TestApi.start({ redis: true, env: { MONGODB_URI: primary.config.mongodbUri! } });
    await publishTo(primary, realSources());
    brandId = primary.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    tenant = await primary.tenant();
    app = await appOf(primary, tenant);
    connectionId = await connectionOf(primary, tenant, app, 'patient-rep', brandId);
  });
  after(async () => {
    await replica.close();
    await primary.close();
  });

  const ingest = async (resources: Record<string, unknown>[]) => {
    const res = await primary.request('POST', `/api/platform/v1/connections/${connectionId}/observations`, {
      key: tenant.key,
      body: observationBundle(resources),
    });
    expect(res.status, res.text).to.equal(200);
  };
  const searchOnReplica = (body: Record<string, unknown> = {}) =>
    replica.request('POST', SEARCH, { key: app.ak, body: { connectionId, ...body } });
  const idsOnReplica = async (body: Record<string, unknown> = {}) =>
    ((await searchOnReplica(body)).body as { entry: { resource: { id: string } }[] }).entry
      .map((e) => e.resource.id)
      .sort();

  it('sees an ingest made on the other replica', async () => {
    await ingest([heartRate({ id: 'hr-1' }), glucose({ id: 'glu-1' })]);
    expect(await idsOnReplica()).to.deep.equal(['glu-1', 'hr-1']); // the replica's index is built now
    await ingest([heartRate({ id: 'hr-2', effectiveDateTime: '2025-01-02T08:00:00Z' })]);
    expect(await idsOnReplica()).to.deep.equal(['glu-1', 'hr-1', 'hr-2']);
    expect(await idsOnReplica({ code: '8867-4' })).to.deep.equal(['hr-1', 'hr-2']);
  });

  it('applies grants changed on the other replica, then refuses a tombstoned subject', async () => {
    expect(await idsOnReplica()).to.have.length(3);
    expect(
      (
        await primary.admin('PATCH', `/apps/${app.appId}`, {
          status: 'ACTIVE',
          grants: { ...GRANTS, loincCodes: ['2339-0'] },
        })
      ).status,
    ).to.equal(200);
    expect(await idsOnReplica()).to.deep.equal(['glu-1']);
    expect(
      (await primary.request('DELETE', '/api/platform/v1/app-users/patient-rep', { key: tenant.key })).status,
    ).to.equal(204);
    expect((await searchOnReplica()).status).to.equal(404);
  });

  it('applies a revoke made on the other replica', async () => {
    const revoked = await connectionOf(primary, tenant, app, 'patient-rev', brandId);
    const search = () => replica.request('POST', SEARCH, { key: app.ak, body: { connectionId: revoked } });
    expect((await search()).status).to.equal(200); // cached on the replica now
    expect(
      (await primary.request('DELETE', `/api/platform/v1/connections/${revoked}`, { key: tenant.key })).status,
    ).to.equal(204);
    expect((await search()).status).to.equal(404);
  });

  it("leaves no token behind for an unknown connection or another tenant's", async () => {
    const stranger = await primary.tenant();
    const theirs = await connectionOf(primary, stranger, await appOf(primary, stranger), 'patient-theirs', brandId);
    const unknown = '00000000-0000-4000-8000-00000000abcd';
    for (const id of [unknown, theirs]) {
      const res = await replica.request('POST', SEARCH, { key: app.ak, body: { connectionId: id } });
      expect(res.status).to.equal(404);
    }
    const redis = primary.redis!;
    expect(
      await redis.exists(`portico:gen:conn:${unknown}`, `portico:gen:obs:${unknown}`, `portico:gen:obs:${theirs}`),
    ).to.equal(0);
  });
});
