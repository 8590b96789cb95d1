import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { TestApi, withTestApi, type Tenant } from '../../../../testkit/api.js';
import { buildEndpoint } from '../../../../testkit/factories.js';
import { webhookClient, withoutSecret } from '../../../../testkit/webhooks.js';

const BASE = '/api/platform/v1/webhook-endpoints';
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const ALL_EVENT_TYPES = [
  'patient.created',
  'patient.deleted',
  'app_user.limited',
  'app_user.activated',
  'app_user.tombstoned',
  'connection.created',
  'connection.revoked',
];

describe('platform: webhook endpoints — create, read, delete', () => {
  let api: TestApi;
  let tenant: Tenant;
  withTestApi((started) => ({ api, tenant } = started));

  const { create, get, patch, listAll } = webhookClient(
    () => api,
    () => tenant.key,
  );

  describe('POST /webhook-endpoints', () => {
    it('creates an ACTIVE endpoint with Location, ETag "1", the documented fields and a signing secret', async () => {
      const input = buildEndpoint({ description: 'Orders service' });
      const res = await create(input);
      expect(res.status).to.equal(201);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      expect(res.headers.get('etag')).to.equal('"1"');
      expect(res.headers.get('location')).to.equal(`${BASE}/${res.body.id}`);
      expect(res.body).to.include({
        resourceType: 'WebhookEndpoint',
        url: input.url,
        description: 'Orders service',
        status: 'ACTIVE',
        consecutiveFailures: 0,
        lastDeliveryAttemptAt: null,
        lastSuccessfulDeliveryAt: null,
        _version: '1',
      });
      expect(res.body.eventTypes).to.deep.equal(input.eventTypes);
      expect(res.body.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[47][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(res.body.createdAt).to.match(TIMESTAMP);
      expect(res.body.updatedAt).to.equal(res.body.createdAt);
      expect(res.body._links).to.deep.equal({ self: { href: `${BASE}/${res.body.id}` } });
      expect(res.body.secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(res.body.secret.slice('whsec_'.length), 'base64')).to.have.length(32);
    });

    it('gives every endpoint its own id and secret', async () => {
      const [a, b] = await Promise.all([create(), create()]);
      expect(a.body.id).to.not.equal(b.body.id);
      expect(a.body.secret).to.not.equal(b.body.secret);
    });

    it('leaves description absent (not null) when it is not given', async () => {
      const { description: _d, ...input } = buildEndpoint();
      const res = await create(input);
      expect(res.status).to.equal(201);
      expect(res.body).to.not.have.property('description');
      expect((await get(res.body.id)).body).to.not.have.property('description');
    });

    it('accepts ["*"] and the complete list of event types', async () => {
      const star = await create(buildEndpoint({ eventTypes: ['*'] }));
      expect(star.status).to.equal(201);
      expect(star.body.eventTypes).to.deep.equal(['*']);
      const all = await create(buildEndpoint({ eventTypes: ALL_EVENT_TYPES }));
      expect(all.status).to.equal(201);
      expect([...all.body.eventTypes].sort()).to.deep.equal([...ALL_EVENT_TYPES].sort());
    });

    it('never shows the secret again: not in GET, list, PATCH or a 304', async () => {
      const created = await create();
      const { id, secret } = created.body;
      const responses = [
        await get(id),
        await api.request('GET', `${BASE}?limit=100`, { key: tenant.key }),
        await patch(id, { description: 'changed' }),
        await patch(id, {}),
        await get(id, { 'if-none-match': '"2"' }),
      ];
      for (const res of responses) {
        expect(res.status).to.be.oneOf([200, 304]);
        expect(res.text).to.not.include(secret);
        expect(res.text).to.not.include('"secret"');
      }
    });
  });

  describe('GET /webhook-endpoints/{id}', () => {
    it('returns the endpoint as created, minus the secret, with ETag', async () => {
      const created = await create();
      const res = await get(created.body.id);
      expect(res.status).to.equal(200);
      expect(res.headers.get('etag')).to.equal('"1"');
      expect(res.body).to.deep.equal(withoutSecret(created.body));
    });

    it('answers 304 with an empty body to a matching weak or strong tag, repeating ETag, Cache-Control and Vary', async () => {
      const created = await create();
      const full = await get(created.body.id);
      for (const tag of ['"1"', 'W/"1"', '"7", W/"1"', '"3","1"', '*']) {
        const res = await get(created.body.id, { 'if-none-match': tag });
        expect(res.status, tag).to.equal(304);
        expect(res.text, tag).to.equal('');
        for (const header of ['etag', 'cache-control', 'vary'])
          expect(res.headers.get(header), `${tag} ${header}`).to.equal(full.headers.get(header));
      }
      for (const tag of ['"2"', 'W/"2"', '"11"']) {
        const res = await get(created.body.id, { 'if-none-match': tag });
        expect(res.status, tag).to.equal(200);
        expect(res.body.id).to.equal(created.body.id);
      }
    });

    it('stops matching the old tag once the endpoint changes', async () => {
      const created = await create();
      expect((await patch(created.body.id, { description: 'v2' })).status).to.equal(200);
      const res = await get(created.body.id, { 'if-none-match': '"1"' });
      expect(res.status).to.equal(200);
      expect(res.headers.get('etag')).to.equal('"2"');
      expect(res.body).to.include({ description: 'v2', _version: '2' });
    });

    it('answers the same 404 for unknown, malformed and deleted ids', async () => {
      const deleted = await create();
      expect((await api.request('DELETE', `${BASE}/${deleted.body.id}`, { key: tenant.key })).status).to.equal(204);
      const answers = [];
      for (const id of [
        randomUUID(),
        'not-a-uuid',
        deleted.body.id,
        '..%2F..%2Fpatients',
        "'%20OR%201%3D1%20--",
        'x'.repeat(500),
      ]) {
        const res = await get(id);
        expect(res.status, id).to.equal(404);
        expect(res.headers.get('content-type'), id).to.match(/^application\/problem\+json/);
        expect(res.body, id).to.include({ code: 'NOT_FOUND', status: 404, retryable: false });
        answers.push(JSON.stringify({ title: res.body.title, detail: res.body.detail, details: res.body.details }));
      }
      expect(new Set(answers).size).to.equal(1);
    });
  });

  describe('DELETE /webhook-endpoints/{id}', () => {
    it('soft-deletes: 204 with no body, then 404 on read, gone from the list, 404 on a second delete', async () => {
      const created = await create();
      const path = `${BASE}/${created.body.id}`;
      expect((await listAll()).map((e) => e.id)).to.include(created.body.id);
      const res = await api.request('DELETE', path, { key: tenant.key });
      expect(res.status).to.equal(204);
      expect(res.text).to.equal('');
      const read = await api.request('GET', path, { key: tenant.key });
      expect(read.status).to.equal(404);
      expect(read.body.code).to.equal('NOT_FOUND');
      expect((await listAll()).map((e) => e.id)).to.not.include(created.body.id);
      const again = await api.request('DELETE', path, { key: tenant.key });
      expect(again.status).to.equal(404);
      expect(again.body.code).to.equal('NOT_FOUND');
    });

    it('answers 404 for an id that never existed', async () => {
      const id = randomUUID();
      const res = await api.request('DELETE', `${BASE}/${id}`, { key: tenant.key });
      expect(res.status).to.equal(404);
      expect(res.body).to.include({ code: 'NOT_FOUND', status: 404, instance: `${BASE}/${id}` });
    });
  });

  describe('with PUBLIC_BASE_URL', () => {
    let hosted: TestApi;
    let owner: Tenant;

    before(async () => {
      hosted = await TestApi.start({ env: { PUBLIC_BASE_URL: 'https://api.portico.example' } });
      owner = await hosted.tenant();
    });
    after(() => hosted.close());

    it('makes Location and _links.self.href absolute', async () => {
      const res = await hosted.request('POST', BASE, { key: owner.key, body: buildEndpoint() });
      const href = `https://api.portico.example${BASE}/${res.body.id}`;
      expect(res.headers.get('location')).to.equal(href);
      expect(res.body._links.self.href).to.equal(href);
      const list = await hosted.request('GET', BASE, { key: owner.key });
      expect(list.body._links.self.href).to.match(
        /^https:\/\/api\.portico\.example\/api\/platform\/v1\/webhook-endpoints/,
      );
      expect(list.body.data[0]._links.self.href).to.equal(href);
    });
  });
});

describe('platform: webhook endpoints — odd ids', () => {
  let api: TestApi;
  let tenant: Tenant;
  withTestApi((started) => ({ api, tenant } = started));

  it('answers a very long id with 404', async () => {
    expect(
      (await api.request('GET', `/api/platform/v1/webhook-endpoints/${'x'.repeat(3000)}`, { key: tenant.key })).status,
    ).to.equal(404);
  });
});
