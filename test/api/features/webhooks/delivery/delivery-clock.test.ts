// Delivery rules that take hours to play out, on an injected clock: a retry minutes later is signed with a
// fresh timestamp (a receiver refuses one more than 5 minutes old), the disable rule needs a day of failing
// as well as the failure count, and a rotated secret keeps signing beside the new one for 24 hours.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { TestApi, type Tenant } from '../../../../../testkit/api.js';
import { ManualClock } from '../../../../../testkit/clock.js';
import { DELIVERY_ENV, PATIENTS, WEBHOOKS, withRealSockets } from '../../../../../testkit/delivery.js';
import { buildPatient } from '../../../../../testkit/factories.js';
import { Receiver, verifyDelivery } from '../../../../../testkit/receivers.js';
import { until } from '../../../../../testkit/until.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

describe('events: webhook delivery over simulated time', () => {
  withRealSockets();
  let api: TestApi;
  let clock: ManualClock;
  let receiver: Receiver;
  let tenant: Tenant;

  before(async () => {
    clock = new ManualClock(new Date('2026-11-20T10:00:00.000Z'));
    api = await TestApi.start({
      dispatch: true,
      clock,
      env: {
        ...DELIVERY_ENV,
        PORTICO_WEBHOOK_RETRY_SCHEDULE: '5m,5m,5m,5m,5m,5m',
        PORTICO_WEBHOOK_DISABLE_AFTER: '3',
        PORTICO_WEBHOOK_DISABLE_WINDOW: '24h',
        PORTICO_WEBHOOK_POLL_MS: '600000',
      },
    });
    receiver = await Receiver.start();
    tenant = await api.tenant();
  });
  after(async () => {
    await receiver.close();
    await api.close();
  });

  const createEndpoint = async (path: string) =>
    (
      await api.request('POST', WEBHOOKS, {
        key: tenant.key,
        body: { url: receiver.url(path), eventTypes: ['patient.created'] },
      })
    ).body as { id: string; secret: string };
  const endpoint = async (id: string) => (await api.request('GET', `${WEBHOOKS}/${id}`, { key: tenant.key })).body;
  /** Moves the clock past the next retry (5 min ± 20 %) and lets the dispatcher look for due work. */
  const nextRetry = async () => {
    clock.advance(7 * MINUTE);
    await api.services.dispatcher.poll();
    await api.services.dispatcher.idle();
  };

  it('signs a retry 5 simulated minutes later with a fresh timestamp: every attempt verifies when it arrives', async () => {
    const { secret } = await createEndpoint('/later');
    receiver.answerWith((request) =>
      request.path === '/later' && receiver.at('/later').length === 1 ? { status: 503 } : { status: 204 },
    );
    await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    const [first] = await receiver.waitAt('/later', 1);
    await api.services.dispatcher.idle();
    await nextRetry();
    const [, second] = await receiver.waitAt('/later', 2);
    expect(second!.headers['webhook-id']).to.equal(first!.headers['webhook-id']);
    expect(Number(second!.headers['webhook-timestamp']) - Number(first!.headers['webhook-timestamp'])).to.be.at.least(
      4 * 60,
    );
    // Each verifies on a receiver whose clock reads the time it arrived (the simulated one).
    verifyDelivery(secret, first!, Number(first!.headers['webhook-timestamp']) * 1000);
    verifyDelivery(secret, second!, clock.now().getTime());
    // The first one's timestamp would be refused now: a retry could not have reused it.
    expect(() => verifyDelivery(secret, first!, clock.now().getTime())).to.throw(/timestamp/i);
  });

  it('delivers an event a process staged before dying, once recovery finds its change in the database', async () => {
    await createEndpoint('/staged');
    receiver.answerWith({ status: 204 });
    const { outbox, patients } = api.services;
    const patient = {
      id: randomUUID(),
      tenantId: tenant.accountId,
      givenName: 'Ada',
      familyName: 'Lovelace',
      createdAt: clock.now(),
      updatedAt: clock.now(),
      version: 1,
      deletedAt: null,
    };
    const event = outbox.event('patient.created', tenant.accountId, `patient:${patient.id}`, { patientId: patient.id });
    // The change is written, then the process "dies" before it can commit the event.
    await outbox
      .record([event], patients.target(tenant.accountId, patient.id, 1), async (changeId) => {
        await patients.insert(patient, changeId);
        throw new Error('killed');
      })
      .catch(() => undefined);
    await api.services.dispatcher.poll();
    expect(receiver.at('/staged')).to.deep.equal([]); // within its window the change may still be under way
    clock.advance(2 * MINUTE);
    await api.services.dispatcher.poll();
    const [delivery] = await receiver.waitAt('/staged', 1);
    expect(delivery!.headers['webhook-id']).to.equal(event.id);
  });

  it('disables only after the failure count and a day without success, both', async () => {
    const { id } = await createEndpoint('/down');
    receiver.answerWith((request) => (request.path === '/down' ? { status: 500 } : { status: 204 }));
    await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    await receiver.waitAt('/down', 1);
    await api.services.dispatcher.idle();
    for (let i = 0; i < 3; i++) await nextRetry();
    await until('4 failures recorded', async () => (await endpoint(id)).consecutiveFailures >= 4);
    expect((await endpoint(id)).status).to.equal('ACTIVE'); // 4 failures, but only 21 minutes of failing
    clock.advance(24 * HOUR);
    await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    await until('DISABLED', async () => (await endpoint(id)).status === 'DISABLED');
  });

  it('signs with both secrets for 24 hours after a rotation, then with the new one alone', async () => {
    const { id, secret: old } = await createEndpoint('/rotating');
    receiver.answerWith({ status: 204 });
    const rotated = await api.request('POST', `${WEBHOOKS}/${id}/rotate-secret`, { key: tenant.key });
    expect(rotated.status).to.equal(200);
    const fresh = rotated.body.secret as string;
    expect(fresh)
      .to.match(/^whsec_/)
      .and.not.equal(old);
    expect(rotated.headers.get('etag')).to.equal('"2"');

    await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    const [during] = await receiver.waitAt('/rotating', 1);
    expect(String(during!.headers['webhook-signature']).split(' ')).to.have.length(2);
    const now = clock.now().getTime();
    verifyDelivery(fresh, during!, now); // a receiver that switched already
    verifyDelivery(old, during!, now); // and one that has not yet

    clock.advance(24 * HOUR + MINUTE);
    await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    const [, after] = await receiver.waitAt('/rotating', 2);
    expect(String(after!.headers['webhook-signature']).split(' ')).to.have.length(1);
    verifyDelivery(fresh, after!, clock.now().getTime());
    expect(() => verifyDelivery(old, after!, clock.now().getTime())).to.throw();
  });
});
