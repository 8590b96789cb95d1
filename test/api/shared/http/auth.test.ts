import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { buildServices } from '../../../../api/src/wiring.js';
import { ADMIN_TOKEN, TestApi, withTestApi, type Response, type Tenant } from '../../../../testkit/api.js';
import { buildPatient } from '../../../../testkit/factories.js';

const PATIENTS = '/api/platform/v1/patients';
const ENDPOINTS = '/api/platform/v1/webhook-endpoints';
const CHALLENGE = 'Bearer realm="portico"';
const INVALID_TOKEN = 'Bearer realm="portico", error="invalid_token"';

const GRANTS = {
  resourceTypes: ['Observation'],
  loincCodes: ['*'],
  confidentiality: ['N', 'L', 'M'],
  sensitivity: [],
  lookbackDays: null,
};

/** A well-shaped key that was never issued. */
const unknownKey = (prefix: string) =>
  `${prefix}_${randomBytes(30)
    .toString('base64')
    .replace(/[^0-9A-Za-z]/g, '')
    .padEnd(40, 'x')
    .slice(0, 40)}`;

function expectUnauthorized(res: Response, challenge: string): void {
  expect(res.status, res.text).to.equal(401);
  expect(res.headers.get('www-authenticate')).to.equal(challenge);
  expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(res.body).to.include({ code: 'UNAUTHORIZED', status: 401, retryable: false });
}

describe('http: authentication and scopes', () => {
  let api: TestApi;
  let tenant: Tenant;
  let app: { publishableKey: string; secretKey: string };

  before(async () => {
    api = await TestApi.start();
    tenant = await api.tenant();
    const created = await api.admin('POST', `/customer-accounts/${tenant.accountId}/apps`, {
      name: 'Auth test app',
      grants: GRANTS,
    });
    expect(created.status, created.text).to.equal(201);
    app = created.body;
  });
  after(() => api.close());

  const asHeader = (authorization: string, path = PATIENTS, method = 'POST') =>
    api.request(method, path, { headers: { authorization }, body: method === 'POST' ? buildPatient() : undefined });
  const countPatients = () => api.mongo.db.collection('patients').countDocuments({ tenantId: tenant.accountId });

  it('accepts a live secret key', async () => {
    expect((await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() })).status).to.equal(201);
  });

  it('answers a request without Authorization with 401 and a bare Bearer challenge', async () => {
    const before = await countPatients();
    expectUnauthorized(await api.request('POST', PATIENTS, { body: buildPatient() }), CHALLENGE);
    expectUnauthorized(await api.request('GET', ENDPOINTS), CHALLENGE);
    expect(await countPatients()).to.equal(before);
  });

  describe('with a credential that is not accepted: 401 with error="invalid_token"', () => {
    const malformed: [string, (key: string) => string][] = [
      ['a Basic credential', () => `Basic ${Buffer.from('user:password').toString('base64')}`],
      ['"Bearer" with nothing after it', () => 'Bearer'],
      ['two tokens', (key) => `Bearer ${key} ${key}`],
      ['a token in another scheme', (key) => `Token ${key}`],
      ['a key without the scheme', (key) => key],
      ['a truncated key', (key) => `Bearer ${key.slice(0, 20)}`],
      ['a key with an extra character', (key) => `Bearer ${key}x`],
    ];
    for (const [what, header] of malformed) {
      it(`refuses ${what}`, async () => {
        expectUnauthorized(await asHeader(header(tenant.key)), INVALID_TOKEN);
      });
    }

    it('refuses a well-shaped sk_ key that was never issued', async () => {
      expectUnauthorized(await asHeader(`Bearer ${unknownKey('sk')}`), INVALID_TOKEN);
      expectUnauthorized(await asHeader(`Bearer ${unknownKey('sk')}`, ENDPOINTS, 'GET'), INVALID_TOKEN);
    });

    it('refuses a revoked key at once, writing nothing', async () => {
      const extra = await api.keyFor(tenant.accountId, ['patient:write', 'webhook:read']);
      expect((await api.request('GET', ENDPOINTS, { key: extra.key })).status).to.equal(200);
      expect((await api.admin('DELETE', `/api-keys/${extra.keyId}`)).status).to.equal(204);
      const before = await countPatients();
      expectUnauthorized(await api.request('POST', PATIENTS, { key: extra.key, body: buildPatient() }), INVALID_TOKEN);
      expectUnauthorized(await api.request('GET', ENDPOINTS, { key: extra.key }), INVALID_TOKEN);
      expect(await countPatients()).to.equal(before);
    });

    it("refuses an app's publishable (pk_) and secret (ak_) keys on the platform surface", async () => {
      expect(app.publishableKey).to.match(/^pk_/);
      expect(app.secretKey).to.match(/^ak_/);
      for (const key of [app.publishableKey, app.secretKey]) {
        expectUnauthorized(await api.request('POST', PATIENTS, { key, body: buildPatient() }), INVALID_TOKEN);
        expectUnauthorized(await api.request('GET', ENDPOINTS, { key }), INVALID_TOKEN);
      }
    });

    it('refuses the admin token on the platform surface', async () => {
      expectUnauthorized(await api.request('GET', ENDPOINTS, { key: ADMIN_TOKEN }), INVALID_TOKEN);
      expectUnauthorized(
        await api.request('POST', PATIENTS, { key: ADMIN_TOKEN, body: buildPatient() }),
        INVALID_TOKEN,
      );
    });

    it('refuses a platform key on the admin surface', async () => {
      const res = await api.request('POST', '/api/admin/v1/customer-accounts', {
        key: tenant.key,
        body: { name: 'Sneaky' },
      });
      expectUnauthorized(res, INVALID_TOKEN);
    });

    it('never echoes the presented key in the answer', async () => {
      const key = unknownKey('sk');
      const res = await asHeader(`Bearer ${key}`);
      expect(res.status).to.equal(401);
      expect(res.text).to.not.include(key);
    });
  });

  it('treats the scheme name case-insensitively (RFC 9110 §11.1)', async () => {
    expect(
      (await api.request('GET', ENDPOINTS, { headers: { authorization: `bearer ${tenant.key}` } })).status,
    ).to.equal(200);
  });

  describe('scopes', () => {
    const cases: [string, string, string, unknown][] = [
      ['POST', PATIENTS, 'patient:write', buildPatient()],
      ['GET', ENDPOINTS, 'webhook:read', undefined],
      ['POST', ENDPOINTS, 'webhook:write', { url: 'https://hooks.example.test/x', eventTypes: ['*'] }],
    ];
    for (const [method, path, scope, body] of cases) {
      it(`answers ${method} ${path.replace('/api/platform/v1', '')} without ${scope} with 403 naming the scope`, async () => {
        const others = ['patient:read', 'patient:write', 'webhook:read', 'webhook:write', 'app_user:read'].filter(
          (s) => s !== scope,
        );
        const limited = await api.keyFor(tenant.accountId, others);
        const res = await api.request(method, path, { key: limited.key, body });
        expect(res.status, res.text).to.equal(403);
        expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
        expect(res.body).to.include({ code: 'PLATFORM_ACCESS_DENIED', status: 403, retryable: false });
        expect(res.body.details).to.deep.equal({ requiredScope: scope });
        expect(res.headers.get('www-authenticate')).to.equal(null);
      });
    }

    it('gives the same detail for every missing scope', async () => {
      const none = await api.keyFor(tenant.accountId, ['app_user:read']);
      const a = await api.request('POST', PATIENTS, { key: none.key, body: buildPatient() });
      const b = await api.request('GET', ENDPOINTS, { key: none.key });
      expect([a.status, b.status]).to.deep.equal([403, 403]);
      expect(a.body.detail).to.equal(b.body.detail);
      expect(a.body.details.requiredScope).to.not.equal(b.body.details.requiredScope);
    });

    it('lets a key do exactly what its scopes allow', async () => {
      const writer = await api.keyFor(tenant.accountId, ['patient:write']);
      const created = await api.request('POST', PATIENTS, { key: writer.key, body: buildPatient() });
      expect(created.status).to.equal(201);
      expect((await api.request('GET', `${PATIENTS}/${created.body.id}`, { key: writer.key })).status).to.equal(403);
      expect((await api.request('GET', `${PATIENTS}/${created.body.id}`, { key: tenant.key })).status).to.equal(200);
    });
  });
});

describe('http: authentication — keys issued elsewhere', () => {
  let api: TestApi;
  let tenant: Tenant;
  withTestApi((started) => ({ api, tenant } = started), { redis: true });

  it('accepts a key issued by another process (the command line) at once, although the API cached the account', async () => {
    const PATIENTS = '/api/platform/v1/patients';
    const { id } = (await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() })).body as {
      id: string;
    };
    expect((await api.request('GET', `${PATIENTS}/${id}`, { key: tenant.key })).status).to.equal(200); // warms the caches
    const cli = await buildServices({ config: api.config, db: api.mongo.db, clock: { now: () => new Date() } }); // no Redis: no invalidation reaches the API
    const issued = await cli.admin.issueKey(tenant.accountId, { scopes: ['patient:read'] });
    await cli.close();
    expect((await api.request('GET', `${PATIENTS}/${id}`, { key: issued.key })).status).to.equal(200);
  });
});
