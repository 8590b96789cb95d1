// Webhook delivery end to end: requests commit events, the dispatcher delivers them to real receivers on
// loopback, and the deliveries verify with the public standardwebhooks library.
import { expect } from 'chai';
import { PassThrough } from 'node:stream';
import { PORTICO_VERSION } from '#core/version.js';
import { TestApi, type Tenant } from '../../../../../testkit/api.js';
import { buildPatient } from '../../../../../testkit/factories.js';
import { DELIVERY_ENV, PATIENTS, settled, WEBHOOKS, withRealSockets } from '../../../../../testkit/delivery.js';
import { eventsOf } from '../../../../../testkit/events.js';
import { Receiver, verifyDelivery } from '../../../../../testkit/receivers.js';
import { until } from '../../../../../testkit/until.js';

describe('events: webhook delivery', () => {
  withRealSockets();
  let api: TestApi;
  let tenant: Tenant;
  let receiver: Receiver;

  before(async () => {
    api = await TestApi.start({ dispatch: true, env: DELIVERY_ENV });
    tenant = await api.tenant();
    receiver = await Receiver.start();
  });
  after(async () => {
    await receiver.close();
    await api.close();
  });

  const createEndpoint = async (body: Record<string, unknown>, key = tenant.key) => {
    const res = await api.request('POST', WEBHOOKS, { key, body });
    expect(res.status, res.text).to.equal(201);
    return res.body as { id: string; secret: string };
  };

  it('delivers a committed event, signed the Standard Webhooks way, to the subscribed ACTIVE endpoints only', async () => {
    const subscribed = await createEndpoint({ url: receiver.url('/subscribed'), eventTypes: ['patient.created'] });
    await createEndpoint({ url: receiver.url('/other-types'), eventTypes: ['patient.deleted'] });
    const paused = await createEndpoint({ url: receiver.url('/paused'), eventTypes: ['*'] });
    await api.request('PATCH', `${WEBHOOKS}/${paused.id}`, {
      key: tenant.key,
      body: { status: 'PAUSED' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    const stranger = await api.tenant();
    await createEndpoint({ url: receiver.url('/stranger'), eventTypes: ['*'] }, stranger.key);

    const before = receiver.received.length;
    const createdFrom = Date.now();
    const patient = await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    const [delivery] = (await receiver.waitFor(before + 1)).slice(before);
    await settled(api.mongo.db); // every attempt the event needed is made: nothing else arrives
    expect(receiver.received.length).to.equal(before + 1);

    const [event] = (await eventsOf(api.mongo.db, tenant.accountId)).filter(
      (e) => e.data.patientId === patient.body.id,
    );
    expect(delivery!.headers).to.include({
      'content-type': 'application/json',
      'user-agent': `Portico-Webhooks/${PORTICO_VERSION}`,
      'webhook-id': event!.id,
    });
    expect(Number(delivery!.headers['webhook-timestamp'])).to.be.within(
      Math.floor(createdFrom / 1000),
      Math.ceil(delivery!.receivedAt / 1000),
    ); // when it was sent
    expect(verifyDelivery(subscribed.secret, delivery!)).to.deep.equal(delivery!.payload);
    expect(delivery!.payload).to.deep.equal({
      id: event!.id,
      type: 'patient.created',
      timestamp: event!.occurredAt.toISOString(),
      customerAccountId: tenant.accountId,
      data: { patientId: patient.body.id },
    });
    expect(delivery!.body).to.not.include(patient.body.familyName); // thin payloads: identifiers only

    await until(
      'the endpoint to show the delivery',
      async () =>
        (await api.request('GET', `${WEBHOOKS}/${subscribed.id}`, { key: tenant.key })).body.lastSuccessfulDeliveryAt,
    );
    const shown = (await api.request('GET', `${WEBHOOKS}/${subscribed.id}`, { key: tenant.key })).body;
    expect(shown).to.include({ consecutiveFailures: 0, status: 'ACTIVE' });
    expect(shown.lastDeliveryAttemptAt).to.equal(shown.lastSuccessfulDeliveryAt);
    const log = await until('the attempt log', async () => {
      const res = await api.request('GET', `${WEBHOOKS}/${subscribed.id}/deliveries`, { key: tenant.key });
      return res.body.data.length > 0 && res.body;
    });
    expect(log.data[0]).to.deep.include({
      eventId: event!.id,
      eventType: 'patient.created',
      attempt: 1,
      trigger: 'SCHEDULED',
      status: 'SUCCEEDED',
      responseStatus: 204,
      error: null,
      nextAttemptAt: null,
    });
    const dispatched = async () => (await eventsOf(api.mongo.db, tenant.accountId, 'dispatched')).map((e) => e.id);
    await until('the event to be done', async () => (await dispatched()).includes(event!.id));
  });

  it('retries a failing endpoint on schedule with the same webhook-id, signing every attempt afresh', async () => {
    const endpoint = await createEndpoint({ url: receiver.url('/flaky'), eventTypes: ['patient.created'] });
    let failures = 2;
    receiver.answerWith((request) => (request.path === '/flaky' && failures-- > 0 ? { status: 500 } : { status: 200 }));
    await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    const attempts = await receiver.waitAt('/flaky', 3);
    receiver.answerWith({ status: 204 });
    expect(new Set(attempts.map((a) => a.headers['webhook-id'])).size).to.equal(1);
    for (const attempt of attempts) expect(verifyDelivery(endpoint.secret, attempt)).to.deep.equal(attempt.payload);
    const log = await until('three attempts in the log', async () => {
      const res = await api.request('GET', `${WEBHOOKS}/${endpoint.id}/deliveries`, { key: tenant.key });
      return res.body.data.filter((a: { status: string }) => a.status !== 'PENDING').length === 3 && res.body.data;
    });
    expect(log.map((a: { attempt: number; status: string }) => [a.attempt, a.status])).to.deep.equal([
      [3, 'SUCCEEDED'],
      [2, 'FAILED'],
      [1, 'FAILED'],
    ]);
    expect(log[2].responseStatus).to.equal(500);
    expect(log[2].nextAttemptAt).to.be.a('string');
    await until(
      'the failure count to reset',
      async () =>
        (await api.request('GET', `${WEBHOOKS}/${endpoint.id}`, { key: tenant.key })).body.consecutiveFailures === 0,
    );
  });

  it('counts attempts in /metrics', async () => {
    await createEndpoint({ url: receiver.url('/metrics'), eventTypes: ['patient.created'] });
    await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    await receiver.waitAt('/metrics', 1);
    await settled(api.mongo.db);
    const metrics = await api.request('GET', '/metrics');
    expect(metrics.text).to.match(/^portico_webhook_attempts_total\{outcome="succeeded"\} [1-9]/m);
    expect(metrics.text).to.match(/^portico_webhook_attempt_duration_seconds_count\{outcome="succeeded"\} [1-9]/m);
    expect(metrics.text).to.match(/^# TYPE portico_webhook_queue_depth gauge$/m);
    expect(metrics.text).to.match(/^# TYPE portico_webhook_oldest_due_age_seconds gauge$/m);
  });

  it('logs one line per attempt, without the secret or the payload', async () => {
    let logs = '';
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => (logs += chunk.toString()));
    const logged = await TestApi.start({ dispatch: true, env: DELIVERY_ENV, logs: stream });
    try {
      const owner = await logged.tenant();
      const created = await logged.request('POST', WEBHOOKS, {
        key: owner.key,
        body: { url: receiver.url('/logged'), eventTypes: ['patient.created'] },
      });
      const patient = buildPatient();
      await logged.request('POST', PATIENTS, { key: owner.key, body: patient });
      await receiver.waitAt('/logged', 1);
      await settled(logged.mongo.db);
      const lines = logs
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const attempts = lines.filter((l) => l.msg === 'webhook attempt');
      expect(attempts).to.have.length(1);
      expect(attempts[0]).to.include({
        endpointId: created.body.id,
        attempt: 1,
        outcome: 'succeeded',
        responseStatus: 204,
      });
      expect(attempts[0]!.eventId).to.be.a('string');
      expect(logs).to.not.include(created.body.secret);
      expect(logs).to.not.include(created.body.secret.slice('whsec_'.length));
      expect(logs).to.not.include(patient.familyName);
    } finally {
      await logged.close();
    }
  });
});
