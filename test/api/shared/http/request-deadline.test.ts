// The request deadline (api/src/shared/http/deadline.ts) and the admission of writes
// (api/src/shared/http/admission.ts), over real HTTP against a database that stops answering (SIGSTOP). The dependency
// deadlines are set far beyond the request deadline here, so what answers is the request deadline or admission, not a
// driver timeout; every check is on what happened (who answered, what was written), never on how fast.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { TestApi, type RequestOptions, type Response, type Tenant } from '../../../../testkit/api.js';
import { buildPatient } from '../../../../testkit/factories.js';
import { startPausableDatabase, type PausableServer } from '../../../../testkit/pausable.js';
import { until } from '../../../../testkit/until.js';

const PATIENTS = '/api/platform/v1/patients';
const REQUEST_TIMEOUT_MS = 1_000;

function expectDeadline(res: Response): void {
  expect(res.status, res.text).to.equal(503);
  expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE', status: 503, retryable: true });
  expect(res.body.detail).to.include(`within ${REQUEST_TIMEOUT_MS} ms`);
  expect(res.headers.get('retry-after')).to.equal('2');
  expect(res.headers.get('x-request-id')).to.be.a('string').and.not.empty;
  expect(res.headers.get('etag')).to.equal(null);
}

describe('http: the request deadline and the admission of writes', function () {
  this.timeout(180_000);
  let database: PausableServer;
  let api: TestApi;
  let tenant: Tenant;

  const post = (key: string, body: Record<string, unknown>, options: RequestOptions = {}) =>
    api.request('POST', PATIENTS, { key: tenant.key, body, headers: { 'idempotency-key': key }, ...options });
  const patientsWithEmail = (email: string) => api.mongo.db.collection('patients').countDocuments({ email });
  const metric = async (name: string) =>
    Number(new RegExp(`^${name} (\\d+)`, 'm').exec((await api.request('GET', '/metrics')).text)?.[1] ?? 0);

  before(async () => {
    database = await startPausableDatabase();
    // Dependency calls would wait 60 s: only the request deadline (1 s) can answer a stalled request.
    api = await TestApi.start({
      mongodbServer: database.url,
      redis: true,
      env: {
        PORTICO_MONGODB_TIMEOUT_MS: '60000',
        PORTICO_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
        PORTICO_MAX_CONCURRENT_WRITES: '1',
      },
    });
    tenant = await api.tenant();
  });
  after(async () => {
    database?.resume();
    await api?.close();
    await database?.stop();
  });
  afterEach(() => database.resume());

  it('answers a write the database holds up with 503 and Retry-After; the work goes on and a retry with the key gets its outcome, executed once', async () => {
    const key = randomUUID();
    const patient = buildPatient();
    const exceededBefore = await metric('portico_request_deadline_exceeded_total');
    database.pause();
    const answered = await post(key, patient);
    expectDeadline(answered);
    expect(answered.body.detail).to.include('a retry with the same Idempotency-Key');
    // Still paused: nothing of the work can have finished, so the answer was the deadline's.
    expect(await metric('portico_request_deadline_exceeded_total')).to.equal(exceededBefore + 1);
    database.resume();

    // The abandoned request goes on. Retries meet IN_USE while it runs, then its stored outcome; or, if a retry
    // claimed the key first (the abandoned one was still waiting on the database before its claim), the
    // retry's outcome, which the abandoned one then replays to nobody. Either way: one execution.
    const replayed = await until('a retry to get the outcome', async () => {
      const res = await post(key, patient);
      if (res.status === 409) expect(res.body.code).to.equal('IDEMPOTENCY_KEY_IN_USE');
      return res.status === 201 && res;
    });
    expect(await post(key, patient)).to.deep.include({ status: 201, text: replayed.text });
    expect(await patientsWithEmail(patient.email as string)).to.equal(1);
    const events = await api.mongo.db
      .collection('outbox_events')
      .countDocuments({ type: 'patient.created', subject: `patient:${replayed.body.id}`, status: { $ne: 'staged' } });
    expect(events, 'committed patient.created events').to.equal(1);
  });

  it('answers a read on the keyed fast path the database holds up with 503, and answers again afterwards', async () => {
    // An id nobody holds, read for the first time: its authorization check needs the database (the key's
    // lookup is cached by a first read of another such id).
    expect((await api.request('GET', `${PATIENTS}/${randomUUID()}`, { key: tenant.key })).status).to.equal(403);
    const path = `${PATIENTS}/${randomUUID()}`;
    database.pause();
    expectDeadline(await api.request('GET', path, { key: tenant.key }));
    database.resume();
    // The late work ends in a denial that goes nowhere; the server answers the next request as before.
    const denied = await until('the read to be answered again', async () => {
      const res = await api.request('GET', path, { key: tenant.key });
      return res.status !== 503 && res;
    });
    expect(denied.status, denied.text).to.equal(403);
    expect(denied.body.code).to.equal('PLATFORM_ACCESS_DENIED');
    // Counted as what the client saw, under the route's template, also when the fast path gave up late.
    const counted = await until('the late read to be counted', async () =>
      Number(
        /^http_requests_total\{method="GET",route="\/api\/platform\/v1\/patients\/:id",status="503"\} (\d+)/m.exec(
          (await api.request('GET', '/metrics')).text,
        )?.[1] ?? 0,
      ),
    );
    expect(counted).to.be.at.least(1);
  });

  it('lets one write work at a time here (PORTICO_MAX_CONCURRENT_WRITES=1): the next waits half the deadline, then is refused 503 having done nothing', async () => {
    const first = { key: randomUUID(), patient: buildPatient() };
    const second = { key: randomUUID(), patient: buildPatient() };
    // The key's lookup is cached by a first write, so the next ones reach admission with the database paused.
    expect((await post(randomUUID(), buildPatient())).status).to.equal(201);
    database.pause();
    const holding = post(first.key, first.patient);
    // The second is sent once the first holds the one slot, not beside it (either could be admitted first).
    await until('the first write to hold the slot', async () => (await metric('portico_writes_in_flight')) === 1);
    const refused = await post(second.key, second.patient);
    expect(refused.status, refused.text).to.equal(503);
    expect(refused.body).to.include({ code: 'SERVICE_UNAVAILABLE', retryable: true });
    expect(refused.body.detail).to.include('busy with other writes; nothing was done');
    expect(refused.headers.get('retry-after')).to.equal('2');
    expectDeadline(await holding);
    database.resume();

    // The refused write did nothing and holds no claim: the same key runs it now (not IN_USE, not a replay).
    const retried = await until('the refused write to run once the first is done', async () => {
      const res = await post(second.key, second.patient);
      return res.status === 201 && res;
    });
    expect(retried.headers.get('idempotent-replayed')).to.equal(null);
    expect(await patientsWithEmail(second.patient.email as string)).to.equal(1);
    await until('the first write to finish', async () => (await post(first.key, first.patient)).status === 201);
    expect(await patientsWithEmail(first.patient.email as string)).to.equal(1);
  });
});
