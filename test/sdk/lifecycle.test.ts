// watchLifecycle against a real API: the probe polled with If-None-Match (304s while nothing moves), each move
// reported, the watch ending by itself on TOMBSTONED; backoff on failures and 429 with an injected sleep.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { createPortico, type LifecycleState } from '../../sdk/js/src/index.js';
import { TestApi, type Tenant } from '../../testkit/api.js';
import { appOf, type AppKeys } from '../../testkit/apps.js';
import { publishTo, realSources } from '../../testkit/catalog.js';
import { recordingFetch } from './support/recording-fetch.js';
import { Ticks } from './support/ticks.js';

const problem = (status: number, code: string, headers: Record<string, string> = {}) =>
  new Response(
    JSON.stringify({
      type: 'about:blank',
      title: code,
      status,
      detail: code,
      instance: '/',
      code,
      details: {},
      retryable: true,
    }),
    {
      status,
      headers: { 'content-type': 'application/problem+json', ...headers },
    },
  );

describe('sdk/js: watchLifecycle', () => {
  let api: TestApi;
  let tenant: Tenant;
  let app: AppKeys;
  let brandId: string;

  before(async () => {
    api = await TestApi.start();
    tenant = await api.tenant();
    app = await appOf(api, tenant);
    await publishTo(api, realSources());
    const some = await api.request('GET', '/api/sdk/v1/catalog/brands?q=health&limit=1');
    brandId = some.body.brands[0].id;
  });
  after(() => api.close());

  it('reports LIMITED → ACTIVE → TOMBSTONED, polls with If-None-Match (304s meanwhile) and ends by itself', async () => {
    const appUserId = `sdk-watch-${randomUUID()}`;
    const ticks = new Ticks();
    const { fetch, calls } = recordingFetch();
    const portico = createPortico({ baseUrl: api.url, publishableKey: app.pk, fetch, sleep: ticks.sleep });
    const session = await portico.initiateConnect({ appUserId, brandId });
    const states: LifecycleState[] = [];
    const watch = portico.watchLifecycle(appUserId, { onChange: (state) => states.push(state) });

    expect(await ticks.asleep()).to.equal(2000);
    expect(states).to.deep.equal(['LIMITED']);
    expect(await ticks.step()).to.equal(2000);
    expect(await ticks.step()).to.equal(2000);
    const probes = () => calls.filter((call) => call.path.endsWith('/lifecycle'));
    expect(probes().map((call) => call.status)).to.deep.equal([200, 304, 304]);
    expect(probes()[0]!.ifNoneMatch).to.be.null;
    expect(probes()[1]!.ifNoneMatch).to.equal(probes()[2]!.ifNoneMatch).and.to.be.a('string');

    const done = await api.request('POST', `/api/platform/v1/connect-sessions/${session.id}/complete`, {
      key: tenant.key,
    });
    expect(done.status, done.text).to.equal(200);
    expect(await ticks.step()).to.equal(2000);
    expect(states).to.deep.equal(['LIMITED', 'ACTIVE']);
    expect(await ticks.step()).to.equal(2000);
    expect(probes().at(-1)!.status).to.equal(304);

    const gone = await api.request('DELETE', `/api/platform/v1/app-users/${appUserId}`, { key: tenant.key });
    expect(gone.status, gone.text).to.equal(204);
    ticks.release();
    expect(await watch.done).to.deep.equal({ reason: 'final', state: 'TOMBSTONED' });
    expect(states).to.deep.equal(['LIMITED', 'ACTIVE', 'TOMBSTONED']);
    const polled = probes().length;
    expect(polled).to.equal(6);
    expect(probes().filter((call) => call.status === 304)).to.have.length(3);
    watch(); // stopping an ended watch is harmless
  });

  it('backs off exponentially on 429 (honouring Retry-After), 503 and network failures, then keeps its interval', async () => {
    const appUserId = `sdk-backoff-${randomUUID()}`;
    const failures = [
      () => problem(429, 'RATE_LIMITED', { 'retry-after': '7' }),
      () => problem(503, 'SERVICE_UNAVAILABLE'),
      () => Promise.reject(new TypeError('fetch failed')),
      () => problem(500, 'INTERNAL_ERROR'),
    ];
    const ticks = new Ticks();
    const { fetch, calls } = recordingFetch((request) => {
      if (!request.url.endsWith('/lifecycle')) return undefined;
      const next = failures.shift();
      return next === undefined ? undefined : Promise.resolve(next());
    });
    const portico = createPortico({ baseUrl: api.url, publishableKey: app.pk, fetch, sleep: ticks.sleep });
    const errors: string[] = [];
    const states: LifecycleState[] = [];
    const watch = portico.watchLifecycle(appUserId, {
      intervalMs: 1000,
      maxIntervalMs: 6000,
      onChange: (state) => states.push(state),
      onError: (error) => errors.push(`${error.status} ${error.code}`),
    });
    const waits = [await ticks.asleep()];
    for (let i = 0; i < 5; i++) waits.push(await ticks.step());
    // 429: 2 s of backoff, but Retry-After says 7; then 4 s; then 8 capped at 6; 500: 6; then 200 and 304.
    expect(waits).to.deep.equal([7000, 4000, 6000, 6000, 1000, 1000]);
    expect(errors).to.deep.equal([
      '429 RATE_LIMITED',
      '503 SERVICE_UNAVAILABLE',
      '0 NETWORK_ERROR',
      '500 INTERNAL_ERROR',
    ]);
    expect(states).to.deep.equal(['UNLINKED']);
    expect(calls.map((call) => call.status)).to.deep.equal([429, 503, 500, 200, 304]); // the network failure has none
    watch();
    expect(await watch.done).to.deep.equal({ reason: 'stopped', state: 'UNLINKED' });
  });

  it('ends on an error that waiting does not fix (a refused key)', async () => {
    const ticks = new Ticks();
    const portico = createPortico({ baseUrl: api.url, publishableKey: `pk_${'y'.repeat(40)}`, sleep: ticks.sleep });
    const watch = portico.watchLifecycle('sdk-refused', { onChange: () => expect.fail('no state') });
    const end = await watch.done;
    expect(end.reason).to.equal('error');
    expect(end.reason === 'error' && end.error).to.include({ status: 401, code: 'UNAUTHORIZED' });
    expect(ticks.waits).to.deep.equal([]);
  });

  it('stops when its signal aborts, also mid-wait', async () => {
    const ticks = new Ticks();
    const portico = createPortico({ baseUrl: api.url, publishableKey: app.pk, sleep: ticks.sleep });
    const controller = new AbortController();
    const watch = portico.watchLifecycle(`sdk-abort-${randomUUID()}`, {
      onChange: () => {},
      signal: controller.signal,
    });
    await ticks.asleep();
    controller.abort();
    expect(await watch.done).to.deep.equal({ reason: 'stopped', state: 'UNLINKED' });
    const aborted = portico.watchLifecycle('sdk-never', {
      onChange: () => expect.fail('no poll'),
      signal: AbortSignal.abort(),
    });
    expect(await aborted.done).to.deep.equal({ reason: 'stopped', state: undefined });
  });
});
