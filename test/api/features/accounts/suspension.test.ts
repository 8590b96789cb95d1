// Account suspension (docs/api.md, "suspension"): PATCH /customer-accounts/{id} {status}; while SUSPENDED every
// credential of the account — sk_, pk_, ak_ — is refused on every route, on the node:http fast paths too (403
// PLATFORM_ACCESS_DENIED on the platform surface, 401 on the SDK surface), and on the other replica as soon as the
// invalidation arrives over Redis; another tenant is untouched, and reactivation restores everything.
import { expect } from 'chai';
import { TestApi, type Tenant } from '../../../../testkit/api.js';
import { appOf, connectionOf, type AppKeys } from '../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';
import { buildPatient } from '../../../../testkit/factories.js';
import { until } from '../../../../testkit/until.js';

describe('accounts: suspension', () => {
  let primary: TestApi;
  let replica: TestApi;
  let tenant: Tenant;
  let other: Tenant;
  let app: AppKeys;
  let patientId: string;
  let connectionId: string;

  before(async () => {
    primary = await TestApi.start({ redis: true });
    replica = await TestApi.start({ redis: true, env: { MONGODB_URI: primary.config.mongodbUri! } });
    await publishTo(primary, realSources());
    const brandId = primary.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    tenant = await primary.tenant();
    other = await primary.tenant();
    app = await appOf(primary, tenant);
    connectionId = await connectionOf(primary, tenant, app, 'patient-sus', brandId);
    patientId = (await primary.request('POST', '/api/platform/v1/patients', { key: tenant.key, body: buildPatient() }))
      .body.id;
  });
  after(async () => {
    await replica.close();
    await primary.close();
  });

  /** One request per credential kind and surface, fast paths included; their statuses. */
  const statuses = async (api: TestApi) => ({
    patientRead: (await api.request('GET', `/api/platform/v1/patients/${patientId}`, { key: tenant.key })).status,
    endpointList: (await api.request('GET', '/api/platform/v1/webhook-endpoints', { key: tenant.key })).status,
    patientCreate: (await api.request('POST', '/api/platform/v1/patients', { key: tenant.key, body: buildPatient() }))
      .status,
    probe: (await api.request('GET', '/api/sdk/v1/app-users/patient-sus/lifecycle', { key: app.pk })).status,
    search: (await api.request('POST', '/api/sdk/v1/observations/_search', { key: app.ak, body: { connectionId } }))
      .status,
  });
  const working = { patientRead: 200, endpointList: 200, patientCreate: 201, probe: 200, search: 200 };
  const refused = { patientRead: 403, endpointList: 403, patientCreate: 403, probe: 401, search: 401 };
  const setStatus = async (status: string) => {
    const res = await primary.admin('PATCH', `/customer-accounts/${tenant.accountId}`, { status });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({ id: tenant.accountId, status });
  };
  /**
   * The replica applies the change once the invalidation arrives over Redis (docs/api.md, "suspension": within a
   * second, which a loaded test machine cannot time). The wait must end before the replica's cached entries (10 s,
   * the shortest lifetime among them) could have expired since they were cached, so only the invalidation can
   * explain the change it sees.
   */
  const onReplica = async (expected: Record<string, number>, cachedAt: number) => {
    let seen: Record<string, number> | undefined;
    await until(
      'the replica to apply the change',
      async () => JSON.stringify((seen = await statuses(replica))) === JSON.stringify(expected),
      { before: cachedAt + 9_000, intervalMs: 20, diagnose: () => `last seen: ${JSON.stringify(seen)}` },
    );
  };

  it('refuses every credential of a suspended account on every replica, and reactivation restores them', async () => {
    const cachedAt = Date.now();
    expect(await statuses(replica)).to.deep.equal(working); // the replica has everything cached now
    // What the replica caches of the suspended account from here on, it cached after this.
    const suspendedAt = Date.now();
    await setStatus('SUSPENDED');
    expect(await statuses(primary)).to.deep.equal(refused);
    await onReplica(refused, cachedAt);
    const denied = await replica.request('GET', `/api/platform/v1/patients/${patientId}`, { key: tenant.key });
    expect(denied.body).to.include({ code: 'PLATFORM_ACCESS_DENIED' });
    const unauthorized = await replica.request('GET', '/api/sdk/v1/app-users/patient-sus/lifecycle', { key: app.pk });
    expect(unauthorized.body).to.include({ code: 'UNAUTHORIZED' });
    // Another tenant is untouched.
    expect((await replica.request('GET', '/api/platform/v1/webhook-endpoints', { key: other.key })).status).to.equal(
      200,
    );

    await setStatus('ACTIVE');
    expect(await statuses(primary)).to.deep.equal(working);
    await onReplica(working, suspendedAt);
  });

  it('answers 404 for an unknown account and 400 for an unknown status', async () => {
    expect(
      (await primary.admin('PATCH', '/customer-accounts/00000000-0000-4000-8000-000000000000', { status: 'SUSPENDED' }))
        .status,
    ).to.equal(404);
    expect(
      (await primary.admin('PATCH', `/customer-accounts/${tenant.accountId}`, { status: 'PAUSED' })).status,
    ).to.equal(400);
    expect(
      (await primary.admin('PATCH', `/customer-accounts/${tenant.accountId}`, { status: 'ACTIVE', name: 'x' })).status,
    ).to.equal(400);
  });
});
