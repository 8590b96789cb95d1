// One slow endpoint never delays another: an endpoint that hangs on every request holds at most 10 attempts
// in flight (each until the 15 s deadline), while a healthy endpoint of the same account gets every event.
import { expect } from 'chai';
import { TestApi } from '../../../../../testkit/api.js';
import { DELIVERY_ENV, PATIENTS, WEBHOOKS, withRealSockets } from '../../../../../testkit/delivery.js';
import { buildPatient } from '../../../../../testkit/factories.js';
import { Receiver } from '../../../../../testkit/receivers.js';

const EVENTS = 30;

describe('events: fairness between endpoints', function () {
  this.timeout(60_000);
  withRealSockets();
  let api: TestApi;
  let hanging: Receiver;
  let healthy: Receiver;

  before(async () => {
    api = await TestApi.start({
      dispatch: true,
      env: { ...DELIVERY_ENV, PORTICO_WEBHOOK_TIMEOUT_MS: '15000', PORTICO_WEBHOOK_LEASE_MS: '60000' },
    });
    hanging = await Receiver.start();
    hanging.answerWith({ status: 200, hang: true });
    healthy = await Receiver.start();
  });
  after(async () => {
    await hanging.close(); // the hung attempts fail now
    await healthy.close();
    await api.close();
  });

  it(`delivers ${EVENTS} events to a healthy endpoint while another hangs, with at most 10 attempts in flight to the hanging one`, async () => {
    const tenant = await api.tenant();
    for (const receiver of [hanging, healthy]) {
      expect(
        (
          await api.request('POST', WEBHOOKS, {
            key: tenant.key,
            body: { url: receiver.url(), eventTypes: ['patient.created'] },
          })
        ).status,
      ).to.equal(201);
    }
    for (let i = 0; i < EVENTS; i++)
      expect((await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() })).status).to.equal(201);
    await healthy.waitFor(EVENTS);
    // Every healthy delivery arrived while the hanging endpoint's first attempts were all still open: none of
    // them had reached its deadline, so nothing had to wait for one.
    expect(hanging.open).to.equal(10);
    expect(hanging.maxOpen).to.equal(10);
    expect(hanging.received).to.have.length(10);
    expect(new Set(healthy.received.map((r) => r.headers['webhook-id'])).size).to.equal(EVENTS);
  });
});
