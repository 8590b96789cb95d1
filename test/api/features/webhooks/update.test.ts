import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { TestApi, withTestApi, type Tenant } from '../../../../testkit/api.js';
import { buildEndpoint } from '../../../../testkit/factories.js';
import { webhookClient, withoutSecret } from '../../../../testkit/webhooks.js';

const BASE = '/api/platform/v1/webhook-endpoints';

describe('platform: webhook endpoints — update (merge patch)', () => {
  let api: TestApi;
  let tenant: Tenant;
  withTestApi((started) => ({ api, tenant } = started));

  const { create, get, patch } = webhookClient(
    () => api,
    () => tenant.key,
  );

  describe('PATCH /webhook-endpoints/{id}', () => {
    it('merges url, eventTypes, description and status, answering the new version', async () => {
      const created = await create();
      const changes = {
        url: 'https://renamed.example.test/in',
        eventTypes: ['connection.created'],
        description: 'renamed',
        status: 'PAUSED',
      };
      const res = await patch(created.body.id, changes);
      expect(res.status).to.equal(200);
      expect(res.headers.get('etag')).to.equal('"2"');
      expect(res.body).to.include({
        url: changes.url,
        description: 'renamed',
        status: 'PAUSED',
        _version: '2',
        id: created.body.id,
        createdAt: created.body.createdAt,
      });
      expect(res.body.eventTypes).to.deep.equal(['connection.created']);
      expect(res.body).to.not.have.property('secret');
      expect((await get(created.body.id)).body).to.deep.equal(res.body);
    });

    it('accepts application/json as well as application/merge-patch+json', async () => {
      const created = await create();
      const res = await patch(created.body.id, { description: 'plain json' }, 'application/json');
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ description: 'plain json', _version: '2' });
    });

    it('leaves fields that the patch does not name untouched', async () => {
      const created = await create(buildEndpoint({ description: 'keep me', eventTypes: ['patient.deleted'] }));
      const res = await patch(created.body.id, { status: 'PAUSED' });
      expect(res.body).to.include({ url: created.body.url, description: 'keep me', status: 'PAUSED' });
      expect(res.body.eventTypes).to.deep.equal(['patient.deleted']);
    });

    it('removes the description when it is patched to null', async () => {
      const created = await create(buildEndpoint({ description: 'temporary' }));
      const res = await patch(created.body.id, { description: null });
      expect(res.status).to.equal(200);
      expect(res.body).to.not.have.property('description');
      expect(res.body._version).to.equal('2');
      expect((await get(created.body.id)).body).to.not.have.property('description');
    });

    it('grows _version by exactly one per change, with a matching ETag each time', async () => {
      const created = await create();
      for (const [i, body] of [
        { description: 'a' },
        { status: 'PAUSED' },
        { eventTypes: ['*'] },
        { status: 'ACTIVE' },
      ].entries()) {
        const res = await patch(created.body.id, body);
        expect(res.status).to.equal(200);
        expect(res.body._version).to.equal(String(i + 2));
        expect(res.headers.get('etag')).to.equal(`"${i + 2}"`);
      }
    });

    it('answers {} with 200 and the unchanged representation, keeping _version', async () => {
      const created = await create();
      const res = await patch(created.body.id, {});
      expect(res.status).to.equal(200);
      expect(res.headers.get('etag')).to.equal('"1"');
      expect(res.body).to.deep.equal(withoutSecret(created.body));
      expect((await get(created.body.id)).body._version).to.equal('1');
    });

    it('keeps _version when a patch only repeats the current values', async () => {
      const created = await create();
      const res = await patch(created.body.id, {
        url: created.body.url,
        eventTypes: created.body.eventTypes,
        description: created.body.description,
        status: 'ACTIVE',
      });
      expect(res.status).to.equal(200);
      expect(res.body._version).to.equal('1');
    });

    it('re-activates a DISABLED endpoint with status ACTIVE, resetting consecutiveFailures', async () => {
      const created = await create();
      await api.mongo.db
        .collection('webhook_endpoints')
        .updateOne({ id: created.body.id }, { $set: { consecutiveFailures: 3, status: 'DISABLED' } });
      const disabled = await get(created.body.id);
      expect(disabled.body).to.include({ status: 'DISABLED', consecutiveFailures: 3 });
      const res = await patch(created.body.id, { status: 'ACTIVE' });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ status: 'ACTIVE', consecutiveFailures: 0, _version: '2' });
      expect((await get(created.body.id)).body).to.include({ status: 'ACTIVE', consecutiveFailures: 0 });
    });

    it('resets consecutiveFailures when status ACTIVE is sent to an endpoint that is already ACTIVE', async () => {
      const created = await create();
      await api.mongo.db
        .collection('webhook_endpoints')
        .updateOne({ id: created.body.id }, { $set: { consecutiveFailures: 4 } });
      const res = await patch(created.body.id, { status: 'ACTIVE' });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ status: 'ACTIVE', consecutiveFailures: 0, _version: '2' });
    });

    it('pauses and resumes an endpoint', async () => {
      const created = await create();
      expect((await patch(created.body.id, { status: 'PAUSED' })).body.status).to.equal('PAUSED');
      expect((await get(created.body.id)).body.status).to.equal('PAUSED');
      expect((await patch(created.body.id, { status: 'ACTIVE' })).body.status).to.equal('ACTIVE');
    });

    it('answers 404 for an unknown or deleted endpoint', async () => {
      const deleted = await create();
      await api.request('DELETE', `${BASE}/${deleted.body.id}`, { key: tenant.key });
      for (const id of [randomUUID(), deleted.body.id, 'not-a-uuid']) {
        const res = await patch(id, { description: 'x' });
        expect(res.status, id).to.equal(404);
        expect(res.body.code).to.equal('NOT_FOUND');
      }
    });
  });
});

describe('platform: webhook endpoints — eventTypes are a set', () => {
  let api: TestApi;
  let tenant: Tenant;
  withTestApi((started) => ({ api, tenant } = started));

  it('treats reordered eventTypes as no change: 200 with the same _version', async () => {
    const BASE = '/api/platform/v1/webhook-endpoints';
    const created = await api.request('POST', BASE, {
      key: tenant.key,
      body: buildEndpoint({ eventTypes: ['patient.created', 'patient.deleted'] }),
    });
    const patched = await api.request('PATCH', `${BASE}/${created.body.id}`, {
      key: tenant.key,
      body: { eventTypes: ['patient.deleted', 'patient.created'] },
    });
    expect(patched.status).to.equal(200);
    expect(patched.body._version).to.equal('1');
  });
});
