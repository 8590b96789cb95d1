// What counts as a failed delivery and what follows from it: redirects are not followed, a slow receiver
// times out, 429/503 Retry-After is honoured, 410 disables at once, repeated failures disable by the rule,
// and a destination that resolves to a private address is refused at connect time.
import { expect } from 'chai';
import { TestApi, lookupFrom, testResolver, type Tenant } from '../../../../../testkit/api.js';
import { buildPatient } from '../../../../../testkit/factories.js';
import { Receiver, type Answer } from '../../../../../testkit/receivers.js';
import { DELIVERY_ENV, PATIENTS, settled, WEBHOOKS, withRealSockets } from '../../../../../testkit/delivery.js';
import { until } from '../../../../../testkit/until.js';

type Attempt = {
  attempt: number;
  status: string;
  responseStatus: number | null;
  error: string | null;
  attemptedAt: string | null;
  nextAttemptAt: string | null;
  eventType: string;
};

describe('events: failed webhook deliveries', () => {
  withRealSockets();
  let api: TestApi;
  let receiver: Receiver;

  before(async () => {
    // Retries 300 ms apart: the endpoint's fields (written every 100 ms) are settled before the next attempt.
    api = await TestApi.start({
      dispatch: true,
      env: {
        ...DELIVERY_ENV,
        PORTICO_WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms,300ms',
        PORTICO_WEBHOOK_TIMEOUT_MS: '500',
        PORTICO_WEBHOOK_DISABLE_AFTER: '3',
        PORTICO_WEBHOOK_DISABLE_WINDOW: '0s',
      },
    });
    receiver = await Receiver.start();
    receiver.answerWith((request): Answer => {
      if (request.path === '/redirect') return { status: 302, headers: { location: receiver.url('/target') } };
      if (request.path === '/slow') return { status: 200, delayMs: 2000 };
      if (request.path === '/busy')
        return request.headers['webhook-id'] && receiver.at('/busy').length === 1
          ? { status: 429, headers: { 'retry-after': '2' } }
          : { status: 200 };
      // The first request is refused for an hour (its retry waits in the queue), every later one is 410.
      if (request.path === '/gone')
        return receiver.at('/gone').length === 1
          ? { status: 503, headers: { 'retry-after': '3600' } }
          : { status: 410 };
      if (request.path === '/broken') return { status: 500 };
      return { status: 204 };
    });
  });
  after(async () => {
    await receiver.close();
    await api.close();
  });

  async function endpointFor(
    tenant: Tenant,
    path: string,
    eventTypes = ['patient.created'],
  ): Promise<{ id: string; secret: string }> {
    const res = await api.request('POST', WEBHOOKS, { key: tenant.key, body: { url: receiver.url(path), eventTypes } });
    expect(res.status, res.text).to.equal(201);
    return res.body;
  }
  const attempts = async (tenant: Tenant, id: string): Promise<Attempt[]> =>
    (await api.request('GET', `${WEBHOOKS}/${id}/deliveries?limit=100`, { key: tenant.key })).body.data;
  const endpoint = async (tenant: Tenant, id: string) =>
    (await api.request('GET', `${WEBHOOKS}/${id}`, { key: tenant.key })).body;
  const emit = (tenant: Tenant) => api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });

  it('does not follow a redirect: the 302 is a failure, and the target hears nothing', async () => {
    const tenant = await api.tenant();
    const { id } = await endpointFor(tenant, '/redirect');
    await emit(tenant);
    const log = await until('a failed attempt', async () =>
      (await attempts(tenant, id)).find((a) => a.status === 'FAILED' && a.attempt === 1),
    );
    expect(log).to.include({ responseStatus: 302 });
    expect(log.nextAttemptAt).to.be.a('string');
    expect(receiver.at('/target')).to.deep.equal([]);
  });

  it('gives up on a receiver slower than the deadline and schedules the next attempt', async () => {
    const tenant = await api.tenant();
    const { id } = await endpointFor(tenant, '/slow');
    await emit(tenant);
    const log = await until('a timed-out attempt', async () =>
      (await attempts(tenant, id)).find((a) => a.status === 'FAILED' && a.attempt === 1),
    );
    expect(log.responseStatus).to.equal(null);
    expect(log.error).to.match(/no complete answer within 500 ms/);
  });

  it('waits at least as long as a 429 Retry-After asks, whatever the schedule says', async () => {
    const tenant = await api.tenant();
    const { id } = await endpointFor(tenant, '/busy');
    await emit(tenant);
    const first = await until('the 429', async () =>
      (await attempts(tenant, id)).find((a) => a.responseStatus === 429),
    );
    const delay = Date.parse(first.nextAttemptAt!) - Date.parse(first.attemptedAt!);
    expect(delay).to.be.at.least(2000); // the schedule alone would say about 300 ms
    await receiver.waitAt('/busy', 2);
    const second = await until('the second attempt', async () =>
      (await attempts(tenant, id)).find((a) => a.attempt === 2 && a.attemptedAt !== null),
    );
    expect(Date.parse(second.attemptedAt!)).to.be.at.least(Date.parse(first.nextAttemptAt!)); // made when it was due, not sooner
  });

  it("disables an endpoint that answers 410 at once, cancels what it had queued, and tells the account's other endpoints", async () => {
    const tenant = await api.tenant();
    const watcher = await endpointFor(tenant, '/watcher', ['webhook_endpoint.disabled']);
    const gone = await endpointFor(tenant, '/gone');
    await emit(tenant);
    await until('the retry queued', async () => (await attempts(tenant, gone.id)).find((a) => a.status === 'PENDING'));
    await emit(tenant);
    await until('DISABLED', async () => (await endpoint(tenant, gone.id)).status === 'DISABLED');
    const [notice] = await receiver.waitAt('/watcher', 1);
    expect(notice!.payload).to.deep.include({
      type: 'webhook_endpoint.disabled',
      customerAccountId: tenant.accountId,
      data: { webhookEndpointId: gone.id, reason: 'gone' },
    });
    await emit(tenant);
    await settled(api.mongo.db);
    expect(receiver.at('/gone')).to.have.length(2); // the 503 and the 410: a DISABLED endpoint receives nothing more
    const log = await attempts(tenant, gone.id);
    expect(log.filter((a) => a.status === 'PENDING')).to.deep.equal([]);
    // The retry the 503 had queued (an hour out) was cancelled when the 410 disabled the endpoint.
    expect(log.map((a) => [a.attempt, a.status, a.error])).to.deep.include.members([
      [2, 'FAILED', 'not attempted: the endpoint was disabled'],
    ]);
    expect(watcher.id).to.be.a('string');
  });

  it('disables an endpoint after the configured run of failures (window 0 s here), and no sooner', async () => {
    const tenant = await api.tenant();
    const { id } = await endpointFor(tenant, '/broken');
    await emit(tenant);
    await until('two failures', async () => (await endpoint(tenant, id)).consecutiveFailures >= 2);
    // After 2 of 3 it is still ACTIVE; the third failure (the last retry here) disables it.
    await until('DISABLED after 3', async () => (await endpoint(tenant, id)).status === 'DISABLED');
    expect((await endpoint(tenant, id)).consecutiveFailures).to.equal(3);
    const log = await attempts(tenant, id);
    expect(log.filter((a) => a.status === 'FAILED' && a.attemptedAt !== null)).to.have.length(3);
  });

  it('cancels what a deleted endpoint had queued: it receives nothing more', async () => {
    const tenant = await api.tenant();
    const { id } = await endpointFor(tenant, '/deleted');
    receiver.answerWith((request) => (request.path === '/deleted' ? { status: 503 } : { status: 204 }));
    await emit(tenant);
    await receiver.waitAt('/deleted', 1);
    const queue = api.mongo.db.collection('webhook_deliveries');
    await until('the retry queued', async () => (await queue.countDocuments({ endpointId: id })) === 1);
    expect((await api.request('DELETE', `${WEBHOOKS}/${id}`, { key: tenant.key })).status).to.equal(204);
    expect(await queue.countDocuments({ endpointId: id })).to.equal(0);
    await settled(api.mongo.db);
    await api.services.dispatcher.idle(); // a retry whose timer was already set finds no queued delivery
    expect(receiver.at('/deleted')).to.have.length(1);
    const records = await api.mongo.db.collection('webhook_attempts').find({ endpointId: id }).toArray();
    expect(records.map((r) => [r.attempt, r.status, r.error])).to.deep.include.members([
      [2, 'FAILED', 'not attempted: the endpoint was deleted'],
    ]);
  });

  describe('a destination that resolves to a private address at delivery time (DNS rebinding)', () => {
    let strict: TestApi;
    before(async () => {
      // Private destinations are refused here, and the delivery's DNS answers loopback for a name that was
      // public when the endpoint was created.
      const rebound = lookupFrom(async (host) =>
        host === 'rebound.example.test'
          ? ['127.0.0.1']
          : host === 'mapped-later.example.test'
            ? ['::ffff:127.0.0.1']
            : testResolver(host),
      );
      strict = await TestApi.start({
        dispatch: true,
        lookup: rebound,
        env: { PORTICO_WEBHOOK_RETRY_SCHEDULE: '100ms', PORTICO_WEBHOOK_POLL_MS: '200' },
      });
    });
    after(() => strict.close());

    it('is refused at connect time and recorded as a failed attempt with the reason', async () => {
      const tenant = await strict.tenant();
      const ids: string[] = [];
      for (const host of ['rebound.example.test', 'mapped-later.example.test']) {
        const res = await strict.request('POST', WEBHOOKS, {
          key: tenant.key,
          body: { url: `https://${host}:${receiver.port}/rebound`, eventTypes: ['patient.created'] },
        });
        expect(res.status, res.text).to.equal(201);
        ids.push(res.body.id);
      }
      await strict.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
      for (const id of ids) {
        const log = await until('a refused attempt', async () =>
          (
            (await strict.request('GET', `${WEBHOOKS}/${id}/deliveries`, { key: tenant.key })).body.data as Attempt[]
          ).find((a) => a.status === 'FAILED'),
        );
        expect(log.error).to.match(/^refused: .* resolves to .*127\.0\.0\.1/);
        expect(log.responseStatus).to.equal(null);
      }
      expect(receiver.at('/rebound')).to.deep.equal([]);
    });
  });
});
