import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { TestApi, withTestApi, type Tenant } from '../../../../testkit/api.js';
import { eventsOf } from '../../../../testkit/events.js';
import { buildPatient } from '../../../../testkit/factories.js';

describe('platform: patients', () => {
  let api: TestApi;
  let tenant: Tenant;
  let other: Tenant;
  withTestApi((started) => ({ api, tenant, other } = started));

  const create = (key: string, body: unknown = buildPatient()) =>
    api.request('POST', '/api/platform/v1/patients', { key, body });

  describe('POST /patients', () => {
    it('creates a profile with Location, ETag and every given field', async () => {
      const input = buildPatient();
      const res = await create(tenant.key, input);
      expect(res.status).to.equal(201);
      expect(res.headers.get('etag')).to.equal('"1"');
      expect(res.headers.get('location')).to.equal(`/api/platform/v1/patients/${res.body.id}`);
      expect(res.body).to.include({ ...input, resourceType: 'Patient', _version: '1' });
      expect(res.body.id).to.match(/^[0-9a-f-]{36}$/);
      expect(res.body.createdAt).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(res.body._links.self.href).to.equal(`/api/platform/v1/patients/${res.body.id}`);
    });

    it('leaves optional fields absent rather than null', async () => {
      const res = await create(tenant.key, { givenName: 'Ada', familyName: 'Lovelace' });
      expect(res.status).to.equal(201);
      expect(res.body).to.not.have.any.keys('birthDate', 'sex', 'email', 'phoneNumber', 'preferredLanguage');
    });

    it('records patient.created in the outbox before answering', async () => {
      const res = await create(tenant.key);
      const events = await eventsOf(api.mongo.db, tenant.accountId);
      const event = events.find((e) => e.data.patientId === res.body.id);
      expect(event).to.include({ type: 'patient.created', status: 'pending', customerAccountId: tenant.accountId });
    });

    const invalid: [string, Record<string, unknown>][] = [
      ['a missing givenName', { givenName: undefined }],
      ['an empty familyName', { familyName: '' }],
      ['a blank givenName', { givenName: '   ' }],
      ['a name over 100 characters', { givenName: 'x'.repeat(101) }],
      ['a control character in a name', { familyName: 'Doe\u0000' }],
      ['a number as a name', { givenName: 42 }],
      ['an impossible date', { birthDate: '2023-02-30' }],
      ['a date in another format', { birthDate: '10/12/1990' }],
      ['a future birth date', { birthDate: '2999-01-01' }],
      ['an unknown sex', { sex: 'M' }],
      ['an invalid email', { email: 'not-an-email' }],
      ['a phone number that is not E.164', { phoneNumber: '415-555-0123' }],
      ['a language that is not BCP 47', { preferredLanguage: 'english!' }],
      ['an unknown property', { ssn: '123-45-6789' }],
      ['an injection-shaped property', { $where: 'sleep(1000)' }],
      ['an operator object in a field', { givenName: { $gt: '' } }],
      ['a prototype-polluting property', JSON.parse('{"__proto__": {"admin": true}}')],
    ];
    for (const [what, change] of invalid) {
      it(`rejects ${what} with a 400 problem naming the field, writing nothing`, async () => {
        const before = (await eventsOf(api.mongo.db, tenant.accountId)).length;
        const res = await create(tenant.key, { ...buildPatient(), ...change });
        expect(res.status).to.equal(400);
        expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
        expect(res.body).to.include({ code: 'BAD_REQUEST', status: 400, retryable: false });
        expect(res.body.details.errors).to.be.an('array').that.is.not.empty;
        expect((await eventsOf(api.mongo.db, tenant.accountId)).length).to.equal(before);
      });
    }

    it('rejects a body that is not an object', async () => {
      for (const raw of ['[]', '"text"', 'null', '42']) {
        const res = await api.request('POST', '/api/platform/v1/patients', {
          key: tenant.key,
          raw,
          headers: { 'content-type': 'application/json' },
        });
        expect(res.status, raw).to.equal(400);
      }
    });

    it('needs patient:write', async () => {
      const reader = await api.keyFor(tenant.accountId, ['patient:read']);
      const res = await create(reader.key);
      expect(res.status).to.equal(403);
      expect(res.body).to.include({ code: 'PLATFORM_ACCESS_DENIED' });
      expect(res.body.details).to.deep.equal({ requiredScope: 'patient:write' });
    });
  });

  describe('GET /patients/{id}', () => {
    it('returns the profile with ETag, Cache-Control and Vary', async () => {
      const created = await create(tenant.key);
      const res = await api.request('GET', `/api/platform/v1/patients/${created.body.id}`, { key: tenant.key });
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal(created.body);
      expect(res.headers.get('etag')).to.equal('"1"');
      expect(res.headers.get('cache-control')).to.equal('private, no-cache');
      expect(res.headers.get('vary')).to.equal('Authorization');
    });

    it('answers 304 with no body to a matching weak or strong tag, repeating the caching headers', async () => {
      const created = await create(tenant.key);
      for (const tag of ['"1"', 'W/"1"', '"7", W/"1"', '*']) {
        const res = await api.request('GET', `/api/platform/v1/patients/${created.body.id}`, {
          key: tenant.key,
          headers: { 'if-none-match': tag },
        });
        expect(res.status, tag).to.equal(304);
        expect(res.text).to.equal('');
        expect(res.headers.get('etag')).to.equal('"1"');
        expect(res.headers.get('cache-control')).to.equal('private, no-cache');
        expect(res.headers.get('vary')).to.equal('Authorization');
      }
      const miss = await api.request('GET', `/api/platform/v1/patients/${created.body.id}`, {
        key: tenant.key,
        headers: { 'if-none-match': '"2"' },
      });
      expect(miss.status).to.equal(200);
    });

    it('gives unknown, malformed and foreign ids the same 403', async () => {
      const foreign = await create(other.key);
      const answers = [];
      for (const id of [
        randomUUID(),
        'not-a-uuid',
        foreign.body.id,
        '../../etc/passwd',
        "' OR 1=1 --",
        'x'.repeat(500),
      ]) {
        const res = await api.request('GET', `/api/platform/v1/patients/${encodeURIComponent(id)}`, {
          key: tenant.key,
        });
        expect(res.status, id).to.equal(403);
        answers.push({
          code: res.body.code,
          detail: res.body.detail,
          details: res.body.details,
          title: res.body.title,
        });
      }
      expect(new Set(answers.map((a) => JSON.stringify(a))).size).to.equal(1);
    });

    it('needs patient:read, saying which scope is missing', async () => {
      const created = await create(tenant.key);
      const writer = await api.keyFor(tenant.accountId, ['patient:write']);
      const res = await api.request('GET', `/api/platform/v1/patients/${created.body.id}`, { key: writer.key });
      expect(res.status).to.equal(403);
      expect(res.body.details).to.deep.equal({ requiredScope: 'patient:read' });
    });

    it('denies a revoked key with 401', async () => {
      const created = await create(tenant.key);
      const extra = await api.keyFor(tenant.accountId, ['patient:read']);
      expect(
        (await api.request('GET', `/api/platform/v1/patients/${created.body.id}`, { key: extra.key })).status,
      ).to.equal(200);
      expect((await api.admin('DELETE', `/api-keys/${extra.keyId}`)).status).to.equal(204);
      const res = await api.request('GET', `/api/platform/v1/patients/${created.body.id}`, { key: extra.key });
      expect(res.status).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.equal('Bearer realm="portico", error="invalid_token"');
    });
  });

  describe('DELETE /patients/{id}', () => {
    it('soft-deletes: 204, then 404 on read and on a second delete, and records patient.deleted', async () => {
      const created = await create(tenant.key);
      const path = `/api/platform/v1/patients/${created.body.id}`;
      expect((await api.request('DELETE', path, { key: tenant.key })).status).to.equal(204);
      const read = await api.request('GET', path, { key: tenant.key });
      expect(read.status).to.equal(404);
      expect(read.body.code).to.equal('NOT_FOUND');
      expect((await api.request('DELETE', path, { key: tenant.key })).status).to.equal(404);
      const events = (await eventsOf(api.mongo.db, tenant.accountId)).filter(
        (e) => e.data.patientId === created.body.id,
      );
      expect(events.map((e) => [e.type, e.status])).to.deep.equal([
        ['patient.created', 'pending'],
        ['patient.deleted', 'pending'],
      ]);
    });

    it("cannot touch another tenant's patient (403) and leaves it intact", async () => {
      const foreign = await create(other.key);
      const res = await api.request('DELETE', `/api/platform/v1/patients/${foreign.body.id}`, { key: tenant.key });
      expect(res.status).to.equal(403);
      expect(
        (await api.request('GET', `/api/platform/v1/patients/${foreign.body.id}`, { key: other.key })).status,
      ).to.equal(200);
    });
  });
});

describe('platform: patients — DELETE preconditions and races', () => {
  const PATIENTS = '/api/platform/v1/patients';
  let api: TestApi;
  let tenant: Tenant;
  withTestApi((started) => ({ api, tenant } = started));
  const createPatient = async () =>
    (await api.request('POST', PATIENTS, { key: tenant.key, body: buildPatient() })).body as { id: string };

  it('honours If-Match (docs/api.md, "Rules every operation follows"): 412 for a stale or weak tag and nothing changes; 400 when malformed; 204 on a match', async () => {
    const { id } = await createPatient();
    for (const [tag, status] of [
      ['"7"', 412],
      ['W/"1"', 412],
      ['garbage', 400],
    ] as const) {
      const res = await api.request('DELETE', `${PATIENTS}/${id}`, { key: tenant.key, headers: { 'if-match': tag } });
      expect(res.status, tag).to.equal(status);
      expect((await api.request('GET', `${PATIENTS}/${id}`, { key: tenant.key })).status).to.equal(200);
    }
    expect(
      (await api.request('DELETE', `${PATIENTS}/${id}`, { key: tenant.key, headers: { 'if-match': '"1"' } })).status,
    ).to.equal(204);
  });

  it('checks authorization and existence before the precondition', async () => {
    const { id } = await createPatient();
    await api.request('DELETE', `${PATIENTS}/${id}`, { key: tenant.key });
    expect(
      (await api.request('DELETE', `${PATIENTS}/${id}`, { key: tenant.key, headers: { 'if-match': '"1"' } })).status,
    ).to.equal(404);
    expect(
      (await api.request('DELETE', `${PATIENTS}/${randomUUID()}`, { key: tenant.key, headers: { 'if-match': '"1"' } }))
        .status,
    ).to.equal(403);
  });

  it('deletes once among parallel deletes, with one patient.deleted event', async () => {
    const { id } = await createPatient();
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => api.request('DELETE', `${PATIENTS}/${id}`, { key: tenant.key })),
    );
    expect(answers.filter((r) => r.status === 204)).to.have.length(1);
    expect(answers.filter((r) => r.status === 404)).to.have.length(5);
    const events = (await eventsOf(api.mongo.db, tenant.accountId)).filter(
      (e) => e.type === 'patient.deleted' && e.data.patientId === id,
    );
    expect(events).to.have.length(1);
  });

  it('answers a very long id with the uniform 403', async () => {
    expect((await api.request('GET', `${PATIENTS}/${'x'.repeat(3000)}`, { key: tenant.key })).status).to.equal(403);
  });
});
