// A dependency that stops answering without closing its connections (SIGSTOP: the process is paused, the
// kernel still accepts and buffers) is the failure that hung requests for good. Paused Redis or database:
// requests that need it and /readyz answer 503 problem details with Retry-After within the dependency's
// deadline, never hang and never 500; resumed: the same requests succeed again without restarting the API.
// Each block runs servers of its own (testkit/pausable.ts), so no other test sees them paused.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { TestApi, type RequestOptions, type Response, type Tenant } from '../../../../testkit/api.js';
import { buildEndpoint, buildPatient } from '../../../../testkit/factories.js';
import { command, startDatabaseProxy, type DatabaseProxy } from '../../../../testkit/database-proxy.js';
import {
  startPausableDatabase,
  startPausableRedis,
  whilePaused,
  type PausableServer,
} from '../../../../testkit/pausable.js';
import { mongoUri } from '../../../../testkit/services.js';
import { until } from '../../../../testkit/until.js';

/** Far beyond every deadline: a request still unanswered then is hanging, and fails its test (not the suite). */
const HANG_MS = 10_000;
/** How long a resumed dependency may take to serve again (reconnection, and what a paused command left behind). */
const RECOVERY_MS = 30_000;

async function call(api: TestApi, method: string, path: string, options: RequestOptions = {}): Promise<Response> {
  try {
    return await api.request(method, path, { ...options, signal: AbortSignal.timeout(HANG_MS) });
  } catch (error) {
    if ((error as Error).name === 'TimeoutError') throw new Error(`${method} ${path}: no answer within ${HANG_MS} ms`);
    throw error;
  }
}

function expectUnavailable(res: Response, dependency: string): void {
  expect(res.status, res.text).to.equal(503);
  expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE', status: 503, retryable: true });
  expect(res.body.detail).to.include(dependency);
  expect(res.headers.get('retry-after')).to.match(/^[1-9]\d*$/);
}

/** The answer of `request` once it has `status`, asking again until RECOVERY_MS have passed. */
async function once(status: number, request: () => Promise<Response>): Promise<Response> {
  let last: Response | undefined;
  return until(`a ${status}`, async () => ((last = await request()).status === status ? last : undefined), {
    timeoutMs: RECOVERY_MS,
    intervalMs: 250,
    diagnose: () => `last answer: ${last?.status} ${last?.text.slice(0, 500)}`,
  });
}

const PATIENTS = '/api/platform/v1/patients';
const ENDPOINTS = '/api/platform/v1/webhook-endpoints';

// On the embedded database, with Redis configured, every read-modify-write of a document takes its lock in Redis
// (core/src/infra/locks.ts): these writes need Redis.

/** The production deadlines (the other tests run with a longer database deadline: testkit/api.ts). */
const DEADLINES = { PORTICO_MONGODB_TIMEOUT_MS: '2500', PORTICO_REDIS_TIMEOUT_MS: '2500' };
describe('http: a paused Redis', function () {
  this.timeout(120_000);
  let redis: PausableServer;
  let api: TestApi;
  let tenant: Tenant;

  before(async () => {
    redis = await startPausableRedis();
    api = await TestApi.start({ redisUrl: redis.url, env: DEADLINES });
    tenant = await api.tenant();
  });
  after(async () => {
    await api?.close();
    await redis?.stop();
  });

  it('answers POST /patients with an Idempotency-Key with 503, and 201 once Redis resumes', async () => {
    const post = (key: string, body: Record<string, unknown>) =>
      call(api, 'POST', PATIENTS, { key: tenant.key, body, headers: { 'idempotency-key': key } });
    await whilePaused(redis, async () => expectUnavailable(await post(randomUUID(), buildPatient()), 'Redis'));
    // New keys: a retry of a failed one waits until its claim's lease has run out (idempotency.ts), and the
    // first requests after the resume may still meet the reconnection.
    const res = await once(201, () => post(randomUUID(), buildPatient()));
    expect(res.status, res.text).to.equal(201);
  });

  it('answers PATCH /webhook-endpoints/{id} with 503, and 200 once Redis resumes', async () => {
    const created = await call(api, 'POST', ENDPOINTS, { key: tenant.key, body: buildEndpoint() });
    expect(created.status, created.text).to.equal(201);
    const patch = (description: string) =>
      call(api, 'PATCH', `${ENDPOINTS}/${created.body.id}`, { key: tenant.key, body: { description } });
    await whilePaused(redis, async () => expectUnavailable(await patch('while paused'), 'Redis'));
    const res = await once(200, () => patch('resumed'));
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({ description: 'resumed' });
  });

  it('answers /readyz with 503 naming redis, and 200 once Redis resumes', async () => {
    await whilePaused(redis, async () => {
      const res = await call(api, 'GET', '/readyz');
      expectUnavailable(res, 'redis');
      expect(res.body.details.checks).to.include({ redis: false, mongodb: true });
    });
    expect((await once(200, () => call(api, 'GET', '/readyz'))).body.checks).to.include({ redis: true });
  });
});

describe('http: a paused database', function () {
  this.timeout(120_000);
  let database: PausableServer;
  let api: TestApi;
  let tenant: Tenant;

  before(async () => {
    database = await startPausableDatabase();
    api = await TestApi.start({ mongodbServer: database.url, env: DEADLINES });
    tenant = await api.tenant();
  });
  after(async () => {
    await api?.close();
    await database?.stop();
  });

  it('answers a platform read (GET /patients/{id}) with 503, and 200 once the database resumes', async () => {
    const created = await call(api, 'POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    expect(created.status, created.text).to.equal(201);
    const get = () => call(api, 'GET', `${PATIENTS}/${created.body.id}`, { key: tenant.key });
    await whilePaused(database, async () => expectUnavailable(await get(), 'MongoDB'));
    const res = await once(200, get);
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({ id: created.body.id });
  });

  it('answers a platform write (POST /patients) with 503, and 201 once the database resumes', async () => {
    const post = () => call(api, 'POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    await whilePaused(database, async () => expectUnavailable(await post(), 'MongoDB'));
    expect((await once(201, post)).status).to.equal(201);
  });

  it('answers /readyz with 503 naming mongodb, and 200 once the database resumes', async () => {
    await whilePaused(database, async () => {
      const res = await call(api, 'GET', '/readyz');
      expectUnavailable(res, 'mongodb');
      expect(res.body.details.checks).to.include({ mongodb: false });
    });
    expect((await once(200, () => call(api, 'GET', '/readyz'))).body.checks).to.include({ mongodb: true });
  });
});

// The embedded database could answer `ping` while its storage answered nothing (its SQLite connections all
// held: docs/operations.md); /readyz stayed 200 for as long. It reads a document now.
describe('http: a database that answers ping but no query', function () {
  this.timeout(60_000);
  let proxy: DatabaseProxy;
  let api: TestApi;

  before(async () => {
    proxy = await startDatabaseProxy(mongoUri());
    api = await TestApi.start({ mongodbServer: proxy.url, env: DEADLINES });
  });
  after(async () => {
    await proxy?.release();
    await api?.close();
    await proxy?.close();
  });

  it('answers /readyz with 503 naming mongodb, and 200 once queries are answered again', async () => {
    expect((await call(api, 'GET', '/readyz')).status).to.equal(200);
    proxy.hold(command('find'));
    const res = await call(api, 'GET', '/readyz');
    expectUnavailable(res, 'mongodb');
    expect(res.body.details.checks).to.include({ mongodb: false });
    await proxy.release();
    expect((await once(200, () => call(api, 'GET', '/readyz'))).body.checks).to.include({ mongodb: true });
  });
});
