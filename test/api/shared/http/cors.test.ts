// CORS for the publishable-key routes, with the requests a browser makes: a preflight (OPTIONS with Origin and
// Access-Control-Request-*) and then the real request, answered on the node:http fast path and by Koa (refusals, the
// rate limit's 429). Secret-key routes answer neither.
import { expect } from 'chai';
import { TestApi, type Tenant } from '../../../../testkit/api.js';
import { appOf, type AppKeys } from '../../../../testkit/apps.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';

const ORIGIN = 'https://app.example.org';
const PROBE = (id: string) => `/api/sdk/v1/app-users/${id}/lifecycle`;
const INITIATE = '/api/sdk/v1/connect-sessions';

describe('http: CORS for publishable-key routes, none for secret-key routes', () => {
  let api: TestApi;
  let tenant: Tenant;
  let app: AppKeys;
  let brandId: string;

  before(async () => {
    api = await TestApi.start({ env: { PORTICO_INITIATE_RATE_LIMIT: '2/60s' } });
    await publishTo(api, realSources());
    brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    tenant = await api.tenant();
    app = await appOf(api, tenant);
  });
  after(() => api.close());

  const preflight = (path: string, method: string, headers: string) =>
    api.request('OPTIONS', path, {
      headers: { origin: ORIGIN, 'access-control-request-method': method, 'access-control-request-headers': headers },
    });
  const expectCors = (res: { headers: Headers }, label: string) => {
    expect(res.headers.get('access-control-allow-origin'), label).to.equal('*');
    const exposed = (res.headers.get('access-control-expose-headers') ?? '').split(/,\s*/);
    expect(exposed, label).to.include.members(['ETag', 'Retry-After', 'RateLimit', 'RateLimit-Policy']);
  };

  it('answers the preflights of the probe and of initiate, without a key', async () => {
    for (const [path, method] of [
      [PROBE('user-1'), 'GET'],
      [INITIATE, 'POST'],
    ] as const) {
      const res = await preflight(path, method, 'authorization, content-type, if-none-match, idempotency-key');
      expect(res.status, path).to.equal(204);
      expect(res.headers.get('access-control-allow-origin'), path).to.equal('*');
      expect(res.headers.get('access-control-allow-methods'), path).to.contain(method);
      const allowed = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/,\s*/);
      expect(allowed, path).to.include.members(['authorization', 'content-type', 'if-none-match', 'idempotency-key']);
    }
  });

  it('lets a browser read the probe (200 and 304, fast path), initiate, and their refusals', async () => {
    const probe = await api.request('GET', PROBE('user-cors'), { key: app.pk, headers: { origin: ORIGIN } });
    expect(probe.status).to.equal(200);
    expectCors(probe, 'probe 200');
    const etag = probe.headers.get('etag')!;
    const unchanged = await api.request('GET', PROBE('user-cors'), {
      key: app.pk,
      headers: { origin: ORIGIN, 'if-none-match': etag },
    });
    expect(unchanged.status).to.equal(304);
    expectCors(unchanged, 'probe 304');
    const refused = await api.request('GET', PROBE('user-cors'), { key: 'pk_unknown', headers: { origin: ORIGIN } });
    expect(refused.status).to.equal(401);
    expectCors(refused, 'probe 401');

    const initiate = () =>
      api.request('POST', INITIATE, {
        key: app.pk,
        headers: { origin: ORIGIN },
        body: { appUserId: 'user-cors', brandId },
      });
    for (let i = 0; i < 2; i++) {
      const started = await initiate();
      expect(started.status, started.text).to.equal(201);
      expectCors(started, 'initiate 201');
    }
    const limited = await initiate();
    expect(limited.status).to.equal(429);
    expectCors(limited, 'initiate 429');
    expect(limited.headers.get('retry-after')).to.match(/^\d+$/);
  });

  it('sends no CORS headers from secret-key routes, preflight or not', async () => {
    for (const [path, method] of [
      ['/api/sdk/v1/observations/_search', 'POST'],
      ['/api/platform/v1/patients', 'POST'],
      ['/api/sdk/v1/fhir/connections/00000000-0000-4000-8000-000000000000/Observation', 'GET'],
    ] as const) {
      const res = await preflight(path, method, 'authorization, content-type');
      expect(res.headers.get('access-control-allow-origin'), path).to.equal(null);
    }
    const res = await api.request('GET', '/api/platform/v1/patients/p-1', {
      key: tenant.key,
      headers: { origin: ORIGIN },
    });
    expect(res.headers.get('access-control-allow-origin')).to.equal(null);
  });
});
