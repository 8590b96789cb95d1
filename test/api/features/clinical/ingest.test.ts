// Clinical ingest over real HTTP: a FHIR R4 Bundle of Observations for one live connection, validated whole
// before anything is written, upserted by id within the connection.
import { expect } from 'chai';
import { TestApi, type Tenant } from '../../../../testkit/api.js';
import { appOf, connectionOf, type AppKeys } from '../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';
import { heartRate, hemoglobin, manyObservations, observationBundle } from '../../../../testkit/observations.js';

const PLATFORM = '/api/platform/v1';

describe('platform: clinical ingest', () => {
  let api: TestApi;
  let tenant: Tenant;
  let other: Tenant;
  let app: AppKeys;
  let brandId: string;
  let connectionId: string;

  before(async () => {
    api = await TestApi.start();
    await publishTo(api, realSources());
    brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    tenant = await api.tenant();
    other = await api.tenant();
    app = await appOf(api, tenant);
    connectionId = await connectionOf(api, tenant, app, 'ingest-user', brandId);
  });
  after(() => api.close());

  const ingest = (id: string, body: unknown, key = tenant.key, headers: Record<string, string> = {}) =>
    api.request('POST', `${PLATFORM}/connections/${id}/observations`, { key, body, headers });
  const stored = () => api.mongo.db.collection('observations').countDocuments({ connectionId });

  it('upserts a bundle by Observation.id: new ones are ingested, known ones updated', async () => {
    const resources = manyObservations(20);
    const first = await ingest(connectionId, observationBundle(resources));
    expect(first.status, first.text).to.equal(200);
    expect(first.body).to.deep.equal({ ingested: 20, updated: 0 });
    const again = await ingest(
      connectionId,
      observationBundle([...resources.slice(0, 5), heartRate()], 'batch'),
      tenant.key,
      { 'content-type': 'application/fhir+json' },
    );
    expect(again.body).to.deep.equal({ ingested: 1, updated: 5 });
    expect(await stored()).to.equal(21);
  });

  it('takes 1000 entries and refuses 1001', async () => {
    expect((await ingest(connectionId, observationBundle(manyObservations(1000)))).body).to.deep.equal({
      ingested: 1000,
      updated: 0,
    });
    const tooMany = await ingest(connectionId, observationBundle(manyObservations(1001)));
    expect(tooMany.status).to.equal(400);
  });

  it('lists every bad entry and writes nothing when one is invalid', async () => {
    const before = await stored();
    const bundle = observationBundle([
      heartRate(),
      heartRate({ status: 'done' }),
      hemoglobin({ code: { coding: [] } }),
      heartRate({ effectiveDateTime: '2023-02-29' }),
    ]);
    const res = await ingest(connectionId, bundle);
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('BAD_REQUEST');
    const names = res.body.details.errors.map((e: { name: string }) => e.name);
    expect(names).to.include('entry[1].resource.status');
    expect(names.some((n: string) => n.startsWith('entry[2].resource.code'))).to.equal(true);
    expect(names.some((n: string) => n.startsWith('entry[3].resource.effectiveDateTime'))).to.equal(true);
    expect(names.some((n: string) => n.startsWith('entry[0]'))).to.equal(false);
    expect(await stored()).to.equal(before);
    expect((await ingest(connectionId, { resourceType: 'Patient' })).status).to.equal(400);
  });

  it('refuses a body over 5 MiB with 413, and other media types with 415', async () => {
    const padded = observationBundle([heartRate({ note: [{ text: 'x'.repeat(5 * 1024 * 1024) }] })]);
    expect((await ingest(connectionId, padded)).status).to.equal(413);
    const text = await api.request('POST', `${PLATFORM}/connections/${connectionId}/observations`, {
      key: tenant.key,
      raw: 'hello',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).to.equal(415);
  });

  it("answers 404 for another account's, a revoked, an unknown or a malformed connection, and 403 without clinical:write", async () => {
    const bundle = observationBundle([heartRate()]);
    expect((await ingest(connectionId, bundle, other.key)).status).to.equal(404);
    const revoked = await connectionOf(api, tenant, app, 'revoked-user', brandId);
    expect((await api.request('DELETE', `${PLATFORM}/connections/${revoked}`, { key: tenant.key })).status).to.equal(
      204,
    );
    expect((await ingest(revoked, bundle)).status).to.equal(404);
    expect((await ingest('00000000-0000-4000-8000-000000000000', bundle)).status).to.equal(404);
    expect((await ingest('nope', bundle)).status).to.equal(404);
    const reader = await api.keyFor(tenant.accountId, ['app_user:read']);
    const denied = await ingest(connectionId, bundle, reader.key);
    expect(denied.status).to.equal(403);
    expect(denied.body.details).to.deep.equal({ requiredScope: 'clinical:write' });
  });
});
