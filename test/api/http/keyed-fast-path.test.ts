// The keyed fast path (lifecycle probe, patient read) answers exactly as the Koa routes do — status, the
// headers that matter and the bytes — because both call the same answer function; anything that is not a
// plain 200 or 304 is left to Koa, which the full handler then reaches.
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TestApi, type Tenant } from '../../support/api.js';
import { appOf, connectionOf, type AppKeys } from '../../support/apps.js';
import { publishTo, realSources } from '../../support/catalog.js';
import { buildPatient } from '../../support/factories.js';

const COMPARED = ['content-type', 'content-length', 'etag', 'cache-control', 'vary'];

describe('http: the keyed fast path', () => {
  let api: TestApi;
  let koaOnly: Server;
  let koaUrl: string;
  let tenant: Tenant;
  let app: AppKeys;
  let patientId: string;

  before(async () => {
    api = await TestApi.start();
    await publishTo(api, realSources());
    tenant = await api.tenant();
    app = await appOf(api, tenant);
    await connectionOf(api, tenant, app, 'fast-user', api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 })[0]!.id);
    patientId = (await api.request('POST', '/api/platform/v1/patients', { key: tenant.key, body: buildPatient() })).body.id;
    koaOnly = createServer(api.koa.callback());
    await new Promise<void>((resolve) => koaOnly.listen(0, '127.0.0.1', resolve));
    koaUrl = `http://127.0.0.1:${(koaOnly.address() as AddressInfo).port}`;
  });
  after(async () => {
    koaOnly.closeAllConnections();
    await new Promise((resolve) => koaOnly.close(resolve));
    await api.close();
  });

  async function both(path: string, headers: Record<string, string>) {
    const [fast, koa] = await Promise.all([fetch(api.url + path, { headers }), fetch(koaUrl + path, { headers })]);
    const read = async (r: Response) => ({ status: r.status, headers: Object.fromEntries(COMPARED.map((h) => [h, r.headers.get(h)])), text: await r.text() });
    const [a, b] = await Promise.all([read(fast), read(koa)]);
    expect(a, path).to.deep.equal(b);
    return a;
  }

  it('answers the probe as Koa does: 200, 304, and the errors Koa owns', async () => {
    const first = await both('/api/sdk/v1/app-users/fast-user/lifecycle', { authorization: `Bearer ${app.pk}` });
    expect(first.status).to.equal(200);
    expect(JSON.parse(first.text)).to.deep.equal({ appUserId: 'fast-user', state: 'ACTIVE' });
    expect((await both('/api/sdk/v1/app-users/fast-user/lifecycle', { authorization: `Bearer ${app.pk}`, 'if-none-match': first.headers.etag! })).status).to.equal(304);
    expect((await both('/api/sdk/v1/app-users/never%40seen/lifecycle', { authorization: `Bearer ${app.pk}` })).text).to.include('UNLINKED');
    expect((await both('/api/sdk/v1/app-users/bad%20id/lifecycle', { authorization: `Bearer ${app.pk}` })).status).to.equal(400);
    expect((await both('/api/sdk/v1/app-users/%E0%A4%A/lifecycle', { authorization: `Bearer ${app.pk}` })).status).to.equal(400);
    expect((await both('/api/sdk/v1/app-users/fast-user/lifecycle', {})).status).to.equal(401);
    expect((await both('/api/sdk/v1/app-users/fast-user/lifecycle', { authorization: `Bearer ${tenant.key}` })).status).to.equal(401);
  });

  it('answers the patient read as Koa does, leaving denials and absences to Koa', async () => {
    const auth = { authorization: `Bearer ${tenant.key}` };
    const first = await both(`/api/platform/v1/patients/${patientId}`, auth);
    expect(first.status).to.equal(200);
    expect((await both(`/api/platform/v1/patients/${patientId}`, { ...auth, 'if-none-match': first.headers.etag! })).status).to.equal(304);
    expect((await both('/api/platform/v1/patients/00000000-0000-4000-8000-000000000000', auth)).status).to.equal(403);
    const reader = await api.keyFor(tenant.accountId, ['webhook:read']);
    expect((await both(`/api/platform/v1/patients/${patientId}`, { authorization: `Bearer ${reader.key}` })).status).to.equal(403);
    const other = await api.tenant();
    expect((await both(`/api/platform/v1/patients/${patientId}`, { authorization: `Bearer ${other.key}` })).status).to.equal(403);
  });

  it('counts its requests under the Koa route templates', async () => {
    await fetch(`${api.url}/api/sdk/v1/app-users/fast-user/lifecycle`, { headers: { authorization: `Bearer ${app.pk}` } });
    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    expect(metrics).to.match(/http_requests_total\{method="GET",route="\/api\/sdk\/v1\/app-users\/:appUserId\/lifecycle",status="200"\} [1-9]/);
    expect(metrics).to.match(/http_requests_total\{method="GET",route="\/api\/platform\/v1\/patients\/:id",status="(200|304)"\} [1-9]/);
  });
});
