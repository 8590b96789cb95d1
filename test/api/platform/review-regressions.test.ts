// Behaviour a review found missing or wrong: each test names the rule it holds the API to.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { buildServices } from '../../../api/src/wiring.js';
import { TestApi, type Tenant } from '../../support/api.js';
import { buildEndpoint, buildPatient } from '../../support/factories.js';
import { testRedisUrl } from '../../support/services.js';

const PATIENTS = '/api/platform/v1/patients';
const ENDPOINTS = '/api/platform/v1/webhook-endpoints';

describe('platform: review regressions', () => {
  let api: TestApi;
  let tenant: Tenant;

  before(async () => {
    api = await TestApi.start({ redis: true });
    tenant = await api.tenant();
  });
  after(() => api.close());

  const createPatient = async () => (await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() })).body as { id: string };

  describe('patient DELETE honours If-Match (CONTRACT §3)', () => {
    it('412 for a stale or weak tag and nothing changes; 400 when malformed; 204 on a match', async () => {
      const { id } = await createPatient();
      for (const [tag, status] of [['"7"', 412], ['W/"1"', 412], ['garbage', 400]] as const) {
        const res = await api.request('DELETE', `${PATIENTS}/${id}`, { key: tenant.key, headers: { 'if-match': tag } });
        expect(res.status, tag).to.equal(status);
        expect((await api.request('GET', `${PATIENTS}/${id}`, { key: tenant.key })).status).to.equal(200);
      }
      expect((await api.request('DELETE', `${PATIENTS}/${id}`, { key: tenant.key, headers: { 'if-match': '"1"' } })).status).to.equal(204);
    });

    it('checks authorization and existence before the precondition', async () => {
      const { id } = await createPatient();
      await api.request('DELETE', `${PATIENTS}/${id}`, { key: tenant.key });
      expect((await api.request('DELETE', `${PATIENTS}/${id}`, { key: tenant.key, headers: { 'if-match': '"1"' } })).status).to.equal(404);
      expect((await api.request('DELETE', `${PATIENTS}/${randomUUID()}`, { key: tenant.key, headers: { 'if-match': '"1"' } })).status).to.equal(403);
    });

    it('deletes once among parallel deletes', async () => {
      const { id } = await createPatient();
      const answers = await Promise.all(Array.from({ length: 6 }, () => api.request('DELETE', `${PATIENTS}/${id}`, { key: tenant.key })));
      expect(answers.filter((r) => r.status === 204)).to.have.length(1);
      expect(answers.filter((r) => r.status === 404)).to.have.length(5);
      const events = (await api.services.outbox.list(tenant.accountId)).filter((e) => e.type === 'patient.deleted' && e.data.patientId === id);
      expect(events).to.have.length(1);
    });
  });

  it('accepts a key issued by another process (the command line) at once, although the API cached the account', async () => {
    const { id } = await createPatient();
    expect((await api.request('GET', `${PATIENTS}/${id}`, { key: tenant.key })).status).to.equal(200); // warms the caches
    const cli = await buildServices({ config: api.config, db: api.mongo.db, clock: { now: () => new Date() } }); // no Redis: no invalidation reaches the API
    const issued = await cli.admin.issueKey(tenant.accountId, { scopes: ['patient:read'] });
    await cli.close();
    expect((await api.request('GET', `${PATIENTS}/${id}`, { key: issued.key })).status).to.equal(200);
  });

  it('a very long id is still the uniform 403 for patients and 404 for endpoints', async () => {
    const long = 'x'.repeat(3000);
    expect((await api.request('GET', `${PATIENTS}/${long}`, { key: tenant.key })).status).to.equal(403);
    expect((await api.request('GET', `${ENDPOINTS}/${long}`, { key: tenant.key })).status).to.equal(404);
  });

  it('stores idempotent outcomes sealed: Redis never holds the secret a replay returns', async () => {
    const key = `seal-${randomUUID()}`;
    const body = buildEndpoint();
    const first = await api.request('POST', ENDPOINTS, { key: tenant.key, body, headers: { 'idempotency-key': key } });
    const replay = await api.request('POST', ENDPOINTS, { key: tenant.key, body, headers: { 'idempotency-key': key } });
    expect(first.status).to.equal(201);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect(replay.text).to.equal(first.text); // the secret comes back byte-for-byte…
    const redis = new Redis(testRedisUrl());
    try {
      const keys = await redis.keys('portico:idem:*');
      expect(keys.length).to.be.greaterThan(0);
      for (const value of await Promise.all(keys.map((k) => redis.get(k)))) {
        expect(value).to.not.include(first.body.secret); // …but the store cannot read it
        expect(value).to.not.include(first.body.id);
      }
    } finally {
      redis.disconnect();
    }
  });

  it('replays Cache-Control and Vary with the stored outcome', async () => {
    const key = `headers-${randomUUID()}`;
    const body = buildPatient();
    const first = await api.request('POST', PATIENTS, { key: tenant.key, body, headers: { 'idempotency-key': key } });
    const replay = await api.request('POST', PATIENTS, { key: tenant.key, body, headers: { 'idempotency-key': key } });
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    for (const header of ['cache-control', 'vary', 'etag', 'location', 'content-type']) expect(replay.headers.get(header), header).to.equal(first.headers.get(header));
  });

  it('treats eventTypes as a set: reordering them is no change', async () => {
    const created = await api.request('POST', ENDPOINTS, { key: tenant.key, body: buildEndpoint({ eventTypes: ['patient.created', 'patient.deleted'] }) });
    const patched = await api.request('PATCH', `${ENDPOINTS}/${created.body.id}`, { key: tenant.key, body: { eventTypes: ['patient.deleted', 'patient.created'] } });
    expect(patched.status).to.equal(200);
    expect(patched.body._version).to.equal('1');
  });

  it('accepts If-Match tags whose opaque part contains a comma', async () => {
    const created = await api.request('POST', ENDPOINTS, { key: tenant.key, body: buildEndpoint() });
    const res = await api.request('PATCH', `${ENDPOINTS}/${created.body.id}`, { key: tenant.key, body: { description: 'x' }, headers: { 'if-match': '"a,b", "1"' } });
    expect(res.status).to.equal(200);
  });
});
