import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { TestApi, withTestApi, type Tenant } from '../../../../testkit/api.js';
import { buildEndpoint } from '../../../../testkit/factories.js';

const BASE = '/api/platform/v1/webhook-endpoints';

/** node:http, because fetch folds repeated headers into one. */
function postWithRepeatedHeader(
  api: TestApi,
  key: string,
  name: string,
  values: string[],
  body: unknown,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${api.url}${BASE}`, { method: 'POST' }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.setHeader('authorization', `Bearer ${key}`);
    req.setHeader('content-type', 'application/json');
    req.setHeader(name, values);
    req.end(JSON.stringify(body));
  });
}

for (const redis of [false, true]) {
  describe(`platform: webhook endpoints — Idempotency-Key (${redis ? 'Redis' : 'in-process'} store)`, () => {
    let api: TestApi;
    let tenant: Tenant;
    withTestApi((started) => ({ api, tenant } = started), { redis });

    const post = (body: unknown, idempotencyKey: string, key = tenant.key) =>
      api.request('POST', BASE, { key, body, headers: { 'idempotency-key': idempotencyKey } });
    const stored = (t: Tenant = tenant) =>
      api.mongo.db.collection('webhook_endpoints').countDocuments({ accountId: t.accountId });
    const create = async () =>
      (await api.request('POST', BASE, { key: tenant.key, body: buildEndpoint({ description: 'v1' }) })).body as {
        id: string;
      };

    it('replays a create byte-for-byte with Idempotent-Replayed, creating one endpoint', async () => {
      const t = await api.tenant();
      const body = buildEndpoint();
      const key = randomUUID();
      const first = await post(body, key, t.key);
      expect(first.status).to.equal(201);
      expect(first.headers.get('idempotent-replayed')).to.equal(null);
      const again = await post(body, key, t.key);
      expect(again.status).to.equal(201);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.text).to.equal(first.text);
      for (const header of ['etag', 'location', 'content-type'])
        expect(again.headers.get(header), header).to.equal(first.headers.get(header));
      expect(await stored(t)).to.equal(1);
    });

    it('treats a quoted key as the same key', async () => {
      const t = await api.tenant();
      const body = buildEndpoint();
      const key = randomUUID();
      const first = await post(body, `"${key}"`, t.key);
      const again = await post(body, key, t.key);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.body.id).to.equal(first.body.id);
      expect(await stored(t)).to.equal(1);
    });

    it('refuses the same key with a different body (422), creating nothing more', async () => {
      const t = await api.tenant();
      const key = randomUUID();
      expect((await post(buildEndpoint(), key, t.key)).status).to.equal(201);
      const res = await post(buildEndpoint(), key, t.key);
      expect(res.status).to.equal(422);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(res.body).to.include({ code: 'IDEMPOTENCY_KEY_REUSED', status: 422, retryable: false });
      expect(await stored(t)).to.equal(1);
    });

    it('refuses the same key on another operation (422)', async () => {
      const key = randomUUID();
      const created = await post(buildEndpoint(), key);
      const del = await api.request('DELETE', `${BASE}/${created.body.id}`, {
        key: tenant.key,
        headers: { 'idempotency-key': key },
      });
      expect(del.status).to.equal(422);
      expect(del.body.code).to.equal('IDEMPOTENCY_KEY_REUSED');
      expect((await api.request('GET', `${BASE}/${created.body.id}`, { key: tenant.key })).status).to.equal(200);
    });

    it("replays a DELETE's 204 instead of answering 404 the second time", async () => {
      const { id } = await create();
      const key = randomUUID();
      const first = await api.request('DELETE', `${BASE}/${id}`, {
        key: tenant.key,
        headers: { 'idempotency-key': key },
      });
      expect(first.status).to.equal(204);
      const again = await api.request('DELETE', `${BASE}/${id}`, {
        key: tenant.key,
        headers: { 'idempotency-key': key },
      });
      expect(again.status).to.equal(204);
      expect(again.text).to.equal('');
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect((await api.request('DELETE', `${BASE}/${id}`, { key: tenant.key })).status).to.equal(404);
    });

    it('replays a stored 404 outcome', async () => {
      const key = randomUUID();
      const path = `${BASE}/${randomUUID()}`;
      const first = await api.request('DELETE', path, { key: tenant.key, headers: { 'idempotency-key': key } });
      expect(first.status).to.equal(404);
      const again = await api.request('DELETE', path, { key: tenant.key, headers: { 'idempotency-key': key } });
      expect(again.status).to.equal(404);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.text).to.equal(first.text);
    });

    it('replays a stored 412 even after the tag it named has become current', async () => {
      const { id } = await create();
      const key = randomUUID();
      const send = () =>
        api.request('PATCH', `${BASE}/${id}`, {
          key: tenant.key,
          body: { description: 'guarded' },
          headers: { 'idempotency-key': key, 'if-match': '"2"' },
        });
      const first = await send();
      expect(first.status).to.equal(412);
      expect(
        (await api.request('PATCH', `${BASE}/${id}`, { key: tenant.key, body: { status: 'PAUSED' } })).body._version,
      ).to.equal('2');
      const again = await send();
      expect(again.status).to.equal(412);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.text).to.equal(first.text);
      expect((await api.request('GET', `${BASE}/${id}`, { key: tenant.key })).body).to.include({
        _version: '2',
        description: 'v1',
      });
    });

    it('replays a PATCH without applying it again', async () => {
      const { id } = await create();
      const key = randomUUID();
      const send = () =>
        api.request('PATCH', `${BASE}/${id}`, {
          key: tenant.key,
          body: { description: 'once' },
          headers: { 'idempotency-key': key },
        });
      const first = await send();
      expect(first.body._version).to.equal('2');
      expect(
        (await api.request('PATCH', `${BASE}/${id}`, { key: tenant.key, body: { description: 'later' } })).body
          ._version,
      ).to.equal('3');
      const again = await send();
      expect(again.status).to.equal(200);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.headers.get('etag')).to.equal('"2"');
      expect(again.text).to.equal(first.text);
      expect((await api.request('GET', `${BASE}/${id}`, { key: tenant.key })).body).to.include({
        _version: '3',
        description: 'later',
      });
    });

    it('does not store requests rejected as invalid, so the key stays usable', async () => {
      const t = await api.tenant();
      const key = randomUUID();
      expect((await post(buildEndpoint({ eventTypes: [] }), key, t.key)).status).to.equal(400);
      expect((await post(buildEndpoint({ url: 'https://internal.example.test/x' }), key, t.key)).status).to.equal(400);
      const res = await post(buildEndpoint(), key, t.key);
      expect(res.status).to.equal(201);
      expect(res.headers.get('idempotent-replayed')).to.equal(null);
      expect(await stored(t)).to.equal(1);
    });

    it('does not store 415 rejections', async () => {
      const t = await api.tenant();
      const key = randomUUID();
      const raw = JSON.stringify(buildEndpoint());
      const refused = await api.request('POST', BASE, {
        key: t.key,
        raw,
        headers: { 'content-type': 'text/plain', 'idempotency-key': key },
      });
      expect(refused.status).to.equal(415);
      const res = await api.request('POST', BASE, {
        key: t.key,
        raw,
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
      });
      expect(res.status).to.equal(201);
      expect(res.headers.get('idempotent-replayed')).to.equal(null);
    });

    it('keeps keys of different API keys of the same account independent', async () => {
      const t = await api.tenant();
      const second = await api.keyFor(t.accountId, ['webhook:read', 'webhook:write']);
      const body = buildEndpoint();
      const key = randomUUID();
      const a = await post(body, key, t.key);
      const b = await post(body, key, second.key);
      expect(a.status).to.equal(201);
      expect(b.status).to.equal(201);
      expect(b.headers.get('idempotent-replayed')).to.equal(null);
      expect(b.body.id).to.not.equal(a.body.id);
      expect(await stored(t)).to.equal(2);
    });

    it('refuses malformed keys with 400, creating nothing', async () => {
      const t = await api.tenant();
      for (const bad of ['', 'x'.repeat(256), 'has space', 'tab\there', '""']) {
        const res = await post(buildEndpoint(), bad, t.key);
        expect(res.status, JSON.stringify(bad)).to.equal(400);
        expect(res.body.code).to.equal('BAD_REQUEST');
        expect(res.body.details.errors.map((e: { name: string }) => e.name)).to.include('Idempotency-Key');
      }
      expect(
        await postWithRepeatedHeader(api, t.key, 'Idempotency-Key', [randomUUID(), randomUUID()], buildEndpoint()),
      ).to.equal(400);
      expect(await stored(t)).to.equal(0);
      expect((await post(buildEndpoint(), 'k'.repeat(255), t.key)).status).to.equal(201);
    });

    it('ignores Idempotency-Key on GET', async () => {
      const { id } = await create();
      for (const key of ['has space', randomUUID()]) {
        const res = await api.request('GET', `${BASE}/${id}`, { key: tenant.key, headers: { 'idempotency-key': key } });
        expect(res.status).to.equal(200);
        expect(res.headers.get('idempotent-replayed')).to.equal(null);
      }
    });
  });
}
