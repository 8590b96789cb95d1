// What a customer does with deliveries: send a test event, recover what an endpoint missed, read the attempt
// log, and the rules around them (ACTIVE only, 14 days back, idempotency, another account's endpoint).
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { TestApi, type Tenant } from '../../../../../testkit/api.js';
import { DELIVERY_ENV, PATIENTS, settled, WEBHOOKS, withRealSockets } from '../../../../../testkit/delivery.js';
import { eventsOf } from '../../../../../testkit/events.js';
import { buildPatient } from '../../../../../testkit/factories.js';
import { Receiver, verifyDelivery } from '../../../../../testkit/receivers.js';
import { until } from '../../../../../testkit/until.js';

const merge = { 'content-type': 'application/merge-patch+json' };

describe('events: webhook delivery operations', () => {
  withRealSockets();
  let api: TestApi;
  let receiver: Receiver;

  before(async () => {
    api = await TestApi.start({
      dispatch: true,
      env: { ...DELIVERY_ENV, PORTICO_WEBHOOK_DISABLE_AFTER: '1', PORTICO_WEBHOOK_DISABLE_WINDOW: '0s' },
    });
    receiver = await Receiver.start();
  });
  after(async () => {
    await receiver.close();
    await api.close();
  });

  async function endpointFor(
    tenant: Tenant,
    path: string,
    eventTypes: string[] = ['patient.created'],
  ): Promise<{ id: string; secret: string }> {
    const res = await api.request('POST', WEBHOOKS, { key: tenant.key, body: { url: receiver.url(path), eventTypes } });
    expect(res.status, res.text).to.equal(201);
    return res.body;
  }
  const log = async (tenant: Tenant, id: string, query = '') =>
    (await api.request('GET', `${WEBHOOKS}/${id}/deliveries${query}`, { key: tenant.key })).body;

  it('sends webhook.test to that endpoint alone, whatever it subscribes to, and logs it as MANUAL', async () => {
    const tenant = await api.tenant();
    const target = await endpointFor(tenant, '/test-target', ['patient.deleted']);
    await endpointFor(tenant, '/test-bystander', ['*']);
    const sent = await api.request('POST', `${WEBHOOKS}/${target.id}/test`, { key: tenant.key });
    expect(sent.status).to.equal(202);
    const [delivery] = await receiver.waitAt('/test-target', 1);
    expect(delivery!.headers['webhook-id']).to.equal(sent.body.eventId);
    expect(verifyDelivery(target.secret, delivery!)).to.deep.include({
      type: 'webhook.test',
      data: { webhookEndpointId: target.id },
    });
    await settled(api.mongo.db);
    expect(receiver.at('/test-bystander')).to.deep.equal([]);
    const entry = await until('the MANUAL attempt', async () =>
      (await log(tenant, target.id)).data.find((a: { trigger: string }) => a.trigger === 'MANUAL'),
    );
    expect(entry).to.include({ eventId: sent.body.eventId, eventType: 'webhook.test', status: 'SUCCEEDED' });
  });

  it('recovers exactly the events a disabled endpoint missed, with their original ids, once it is ACTIVE again', async () => {
    const tenant = await api.tenant();
    const since = new Date(Date.now() - 1000).toISOString();
    const endpoint = await endpointFor(tenant, '/recovering');
    let failing = true; // until the endpoint is set ACTIVE again
    receiver.answerWith((request) => (request.path === '/recovering' && failing ? { status: 500 } : { status: 204 }));
    // 1st event: delivered? No: it fails and the endpoint is disabled (after one failure here).
    const first = await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    await until(
      'DISABLED',
      async () =>
        (await api.request('GET', `${WEBHOOKS}/${endpoint.id}`, { key: tenant.key })).body.status === 'DISABLED',
    );
    // 2nd and 3rd events happen while it is DISABLED: skipped.
    const missed = [
      await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() }),
      await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() }),
    ];
    const events = await until('three events dispatched', async () => {
      const all = (await eventsOf(api.mongo.db, tenant.accountId)).filter((e) => e.type === 'patient.created');
      return all.length === 3 && all.every((e) => e.status === 'dispatched') && all;
    });
    expect(
      (await api.request('POST', `${WEBHOOKS}/${endpoint.id}/recover`, { key: tenant.key, body: { since } })).status,
    ).to.equal(409); // not while DISABLED

    failing = false;
    await api.request('PATCH', `${WEBHOOKS}/${endpoint.id}`, {
      key: tenant.key,
      body: { status: 'ACTIVE' },
      headers: merge,
    });
    const before = receiver.at('/recovering').length;
    const recovered = await api.request('POST', `${WEBHOOKS}/${endpoint.id}/recover`, {
      key: tenant.key,
      body: { since },
    });
    expect(recovered.status).to.equal(202);
    expect(recovered.body).to.deep.equal({ events: 3 });
    const arrived = (await receiver.waitAt('/recovering', before + 3)).slice(before);
    expect(new Set(arrived.map((r) => r.headers['webhook-id']))).to.deep.equal(new Set(events.map((e) => e.id)));
    for (const delivery of arrived) verifyDelivery(endpoint.secret, delivery);
    expect([first, ...missed].map((r) => r.status)).to.deep.equal([201, 201, 201]);

    // Now that each reached it, recovering again queues nothing.
    await until(
      'the recovered attempts logged',
      async () =>
        (await log(tenant, endpoint.id)).data.filter(
          (a: { trigger: string; status: string }) => a.trigger === 'RECOVER' && a.status === 'SUCCEEDED',
        ).length === 3,
    );
    expect(
      (await api.request('POST', `${WEBHOOKS}/${endpoint.id}/recover`, { key: tenant.key, body: { since } })).body,
    ).to.deep.equal({ events: 0 });
  });

  it('is not disabled again, once ACTIVE, by a failure answered late to an attempt made before', async () => {
    const tenant = await api.tenant();
    const endpoint = await endpointFor(tenant, '/late');
    const path = `${WEBHOOKS}/${endpoint.id}`;
    const shown = async () => (await api.request('GET', path, { key: tenant.key })).body;
    let failing = true; // until the endpoint is set ACTIVE again
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The first attempt's answer, a failure, is held until the endpoint is ACTIVE again; the others fail meanwhile.
    receiver.answerWith((request) => {
      if (request.path !== '/late') return { status: 204 };
      const first = receiver.at('/late').length === 1;
      if (first) return { status: 503, headers: { 'retry-after': '3600' }, after: released };
      return { status: failing ? 500 : 204 };
    });
    await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    await receiver.waitAt('/late', 1);
    await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    await until('DISABLED', async () => (await shown()).status === 'DISABLED');
    failing = false;
    const active = { status: 'ACTIVE', consecutiveFailures: 0 };
    const patched = await api.request('PATCH', path, { key: tenant.key, body: { status: 'ACTIVE' }, headers: merge });
    expect(patched.body).to.include(active);

    // The held failure arrives now; once the dispatcher has written what it recorded of it, the endpoint is still
    // ACTIVE: the failure belongs to the count the owner has just started afresh (docs/api.md, "Receiving webhooks").
    release();
    await api.services.dispatcher.idle();
    expect(await shown()).to.include(active);
    const sent = await api.request('POST', `${path}/test`, { key: tenant.key });
    expect(sent.status).to.equal(202);
    const { eventId } = sent.body;
    await until('the test event', () => receiver.at('/late').some((r) => r.headers['webhook-id'] === eventId));
    // Its retry, an hour away, goes with it.
    expect((await api.request('DELETE', path, { key: tenant.key })).status).to.equal(204);
  });

  it('recovers nothing from before the endpoint existed', async () => {
    const tenant = await api.tenant();
    const since = new Date(Date.now() - 60_000).toISOString();
    await endpointFor(tenant, '/older');
    await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() });
    await settled(api.mongo.db);
    const newer = await endpointFor(tenant, '/newer');
    const recovered = await api.request('POST', `${WEBHOOKS}/${newer.id}/recover`, {
      key: tenant.key,
      body: { since },
    });
    expect(recovered.status).to.equal(202);
    expect(recovered.body).to.deep.equal({ events: 0 });
  });

  it('refuses recover from more than 14 days ago, and from the future', async () => {
    const tenant = await api.tenant();
    const { id } = await endpointFor(tenant, '/window');
    for (const since of [new Date(Date.now() - 15 * 86_400_000), new Date(Date.now() + 60_000)]) {
      const res = await api.request('POST', `${WEBHOOKS}/${id}/recover`, {
        key: tenant.key,
        body: { since: since.toISOString() },
      });
      expect(res.status).to.equal(400);
      expect(res.body.details.errors[0]).to.include({ in: 'body', name: 'since' });
    }
    expect(
      (await api.request('POST', `${WEBHOOKS}/${id}/recover`, { key: tenant.key, body: { since: 'yesterday' } }))
        .status,
    ).to.equal(400);
  });

  it('pages the attempt log newest first with cursors bound to the endpoint and the status filter', async () => {
    const tenant = await api.tenant();
    const { id } = await endpointFor(tenant, '/paged');
    receiver.answerWith({ status: 204 });
    for (let i = 0; i < 5; i++) await api.request('POST', `${WEBHOOKS}/${id}/test`, { key: tenant.key });
    await until('five attempts', async () => (await log(tenant, id, '?limit=100')).data.length === 5);
    const first = await log(tenant, id, '?limit=2');
    expect(first.data).to.have.length(2);
    expect(first.pagination.hasMore).to.equal(true);
    const second = await log(tenant, id, `?limit=2&cursor=${encodeURIComponent(first.pagination.nextCursor)}`);
    const third = await log(tenant, id, `?limit=2&cursor=${encodeURIComponent(second.pagination.nextCursor)}`);
    const ids = [...first.data, ...second.data, ...third.data].map((a: { id: string }) => a.id);
    expect(ids).to.have.length(5);
    expect([...ids].sort().reverse()).to.deep.equal(ids);
    expect(third.pagination).to.deep.equal({ nextCursor: null, hasMore: false });
    const other = await endpointFor(tenant, '/paged-other');
    expect(
      (
        await api.request(
          'GET',
          `${WEBHOOKS}/${other.id}/deliveries?cursor=${encodeURIComponent(first.pagination.nextCursor)}`,
          { key: tenant.key },
        )
      ).status,
    ).to.equal(400);
    expect(
      (
        await api.request(
          'GET',
          `${WEBHOOKS}/${id}/deliveries?status=FAILED&cursor=${encodeURIComponent(first.pagination.nextCursor)}`,
          { key: tenant.key },
        )
      ).status,
    ).to.equal(400);
    expect((await log(tenant, id, '?status=SUCCEEDED&limit=100')).data).to.have.length(5);
    expect((await api.request('GET', `${WEBHOOKS}/${id}/deliveries?limit=0`, { key: tenant.key })).status).to.equal(
      400,
    );
  });

  it("answers another account's, a deleted or an unknown endpoint with 404 on every delivery operation", async () => {
    const owner = await api.tenant();
    const stranger = await api.tenant();
    const { id } = await endpointFor(owner, '/isolated');
    const gone = await endpointFor(owner, '/isolated-deleted');
    await api.request('DELETE', `${WEBHOOKS}/${gone.id}`, { key: owner.key });
    const since = new Date().toISOString();
    for (const [key, target] of [
      [stranger.key, id],
      [owner.key, gone.id],
      [owner.key, randomUUID()],
    ] as const) {
      const answers = [
        await api.request('GET', `${WEBHOOKS}/${target}/deliveries`, { key }),
        await api.request('POST', `${WEBHOOKS}/${target}/recover`, { key, body: { since } }),
        await api.request('POST', `${WEBHOOKS}/${target}/rotate-secret`, { key }),
        await api.request('POST', `${WEBHOOKS}/${target}/test`, { key }),
      ];
      for (const answer of answers) expect(answer.status, answer.text).to.equal(404);
      expect(new Set(answers.map((a) => a.body.detail)).size).to.equal(1);
    }
  });

  it('replays test and rotate-secret for a repeated Idempotency-Key instead of doing them again', async () => {
    const tenant = await api.tenant();
    const { id } = await endpointFor(tenant, '/idempotent');
    const key = `idem-${randomUUID()}`;
    const send = () =>
      api.request('POST', `${WEBHOOKS}/${id}/test`, { key: tenant.key, headers: { 'idempotency-key': key } });
    const [a, b] = [await send(), await send()];
    expect(b.body.eventId).to.equal(a.body.eventId);
    expect(b.headers.get('idempotent-replayed')).to.equal('true');
    // Another endpoint, which no delivery touches (a delivery's outcome is a change of its endpoint too).
    const quiet = await endpointFor(tenant, '/idempotent-rotation');
    const rotateKey = `idem-${randomUUID()}`;
    const rotate = () =>
      api.request('POST', `${WEBHOOKS}/${quiet.id}/rotate-secret`, {
        key: tenant.key,
        headers: { 'idempotency-key': rotateKey },
      });
    const [r1, r2] = [await rotate(), await rotate()];
    expect(r2.body.secret).to.equal(r1.body.secret);
    expect((await api.request('GET', `${WEBHOOKS}/${quiet.id}`, { key: tenant.key })).body._version).to.equal('2');
  });

  it('takes webhook_endpoint.disabled among eventTypes, and not webhook.test', async () => {
    const tenant = await api.tenant();
    expect(
      (
        await api.request('POST', WEBHOOKS, {
          key: tenant.key,
          body: { url: receiver.url('/types'), eventTypes: ['webhook_endpoint.disabled'] },
        })
      ).status,
    ).to.equal(201);
    expect(
      (
        await api.request('POST', WEBHOOKS, {
          key: tenant.key,
          body: { url: receiver.url('/types'), eventTypes: ['webhook.test'] },
        })
      ).status,
    ).to.equal(400);
  });
});
