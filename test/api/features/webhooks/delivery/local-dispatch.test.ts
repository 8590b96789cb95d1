// Who dispatches what a replica commits (api/src/features/events/signals.ts,
// api/src/features/webhooks/delivery/dispatcher.ts): a replica that
// runs a dispatcher takes the events it commits itself and tells no other replica; one that runs none announces them
// over Redis, and a dispatching replica takes them. An event no endpoint is to hear is settled in one write, without a
// claim; one an endpoint subscribes to is claimed and delivered as always.
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { TestApi } from '../../../../../testkit/api.js';
import { DELIVERY_ENV, PATIENTS, settled, WEBHOOKS, withRealSockets } from '../../../../../testkit/delivery.js';
import { buildPatient } from '../../../../../testkit/factories.js';
import { Receiver } from '../../../../../testkit/receivers.js';
import { testRedisUrl } from '../../../../../testkit/services.js';
import { until } from '../../../../../testkit/until.js';
import { WORK_CHANNEL } from '../../../../../api/src/features/events/signals.js';

interface EventDoc {
  _id: string;
  subject: string;
  status: string;
  claims: number;
}

describe('events: the dispatcher takes what its replica commits', function () {
  this.timeout(60_000);
  withRealSockets();
  let dispatching: TestApi;
  let serving: TestApi;
  let listener: Redis;
  const announced: string[] = [];

  before(async () => {
    // No backstop pass after the first (DELIVERY_ENV polls every 200 ms): one could find an event between its
    // commit and the committing replica's own settling, and claim it, which is right but not what this checks.
    dispatching = await TestApi.start({
      redis: true,
      dispatch: true,
      env: { ...DELIVERY_ENV, PORTICO_WEBHOOK_POLL_MS: '600000' },
    });
    // A replica that serves requests only (PORTICO_WEBHOOK_DISPATCH=false), on the same database and Redis.
    serving = await TestApi.start({
      redis: true,
      env: { ...DELIVERY_ENV, MONGODB_URI: dispatching.config.mongodbUri!, PORTICO_WEBHOOK_DISPATCH: 'false' },
    });
    listener = new Redis(testRedisUrl());
    listener.on('message', (_channel: string, message: string) =>
      announced.push(...((JSON.parse(message) as { events?: string[] }).events ?? [])),
    );
    await listener.subscribe(WORK_CHANNEL);
  });
  after(async () => {
    listener?.disconnect();
    await serving?.close();
    await dispatching?.close();
  });

  const eventOf = async (patientId: string) =>
    (await dispatching.mongo.db
      .collection<EventDoc>('outbox_events')
      .findOne({ subject: `patient:${patientId}`, type: 'patient.created' }))!;

  it('settles an event no endpoint hears in one write, without a claim, and announces it to no other replica', async () => {
    const tenant = await dispatching.tenant();
    const created = await dispatching.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    expect(created.status, created.text).to.equal(201);
    const event = await until('the event to be dispatched', async () => {
      const doc = await eventOf(created.body.id);
      return doc.status === 'dispatched' && doc;
    });
    expect(event.claims, 'claims').to.equal(0);
    // An announcement made by a later request arrives after any earlier one: this replica sent none for the first.
    const marker = await serving.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    const markerEvent = await until('the serving replica’s event', async () => (await eventOf(marker.body.id))?._id);
    await until('the serving replica’s announcement', () => announced.includes(markerEvent));
    expect(announced).to.not.include(event._id);
  });

  it('has an event committed by a replica without a dispatcher taken by the one with it', async () => {
    const tenant = await dispatching.tenant();
    const created = await serving.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    expect(created.status, created.text).to.equal(201);
    const event = await until('the event to be dispatched', async () => {
      const doc = await eventOf(created.body.id);
      return doc?.status === 'dispatched' && doc;
    });
    // Announced over Redis without what the committing replica knew of it: the dispatcher claims it.
    expect(event.claims).to.equal(1);
  });

  it('claims and delivers an event an endpoint subscribes to', async () => {
    const receiver = await Receiver.start();
    try {
      const tenant = await dispatching.tenant();
      const endpoint = await dispatching.request('POST', WEBHOOKS, {
        key: tenant.key,
        body: { url: receiver.url('/local'), eventTypes: ['patient.created'] },
      });
      expect(endpoint.status, endpoint.text).to.equal(201);
      const created = await dispatching.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
      await receiver.waitAt('/local', 1);
      await settled(dispatching.mongo.db);
      const event = await eventOf(created.body.id);
      expect(event).to.include({ status: 'dispatched', claims: 1 });
      expect(receiver.at('/local').map((r) => r.headers['webhook-id'])).to.deep.equal([event._id]);
    } finally {
      await receiver.close();
    }
  });
});
