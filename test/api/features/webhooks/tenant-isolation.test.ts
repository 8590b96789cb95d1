import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { TestApi, type Response, type Tenant } from '../../../../testkit/api.js';
import { buildEndpoint } from '../../../../testkit/factories.js';

const BASE = '/api/platform/v1/webhook-endpoints';

describe('platform: webhook endpoints — tenant isolation, scopes and credentials', () => {
  let api: TestApi;
  let tenant: Tenant;
  let other: Tenant;

  before(async () => {
    api = await TestApi.start();
    [tenant, other] = await Promise.all([api.tenant(), api.tenant()]);
  });
  after(() => api.close());

  const create = async (owner: Tenant) => {
    const res = await api.request('POST', BASE, { key: owner.key, body: buildEndpoint({ description: 'theirs' }) });
    expect(res.status).to.equal(201);
    return res.body as Record<string, unknown> & { id: string; secret: string };
  };
  const read = (owner: Tenant, id: string) => api.request('GET', `${BASE}/${id}`, { key: owner.key });
  const notFoundShape = (res: Response) =>
    JSON.stringify({
      status: res.status,
      code: res.body?.code,
      title: res.body?.title,
      detail: res.body?.detail,
      details: res.body?.details,
    });

  describe("another account's endpoint", () => {
    it('is 404 on every route, shaped exactly like an unknown id, and stays unchanged', async () => {
      const foreign = await create(other);
      const before = await read(other, foreign.id);
      const attempts: [string, string, Record<string, string>, unknown][] = [
        ['GET', foreign.id, {}, undefined],
        ['GET', foreign.id, { 'if-none-match': '"1"' }, undefined],
        ['PATCH', foreign.id, {}, { description: 'mine now', url: 'https://attacker.example.test/x' }],
        ['PATCH', foreign.id, { 'if-match': '"1"' }, { status: 'PAUSED' }],
        ['PATCH', foreign.id, { 'if-match': '*' }, { eventTypes: ['*'] }],
        ['PATCH', foreign.id, { 'idempotency-key': randomUUID() }, { status: 'PAUSED' }],
        ['DELETE', foreign.id, {}, undefined],
        ['DELETE', foreign.id, { 'if-match': '"1"' }, undefined],
        ['DELETE', foreign.id, { 'if-match': '*' }, undefined],
        ['DELETE', foreign.id, { 'idempotency-key': randomUUID() }, undefined],
      ];
      for (const [method, id, headers, body] of attempts) {
        const res = await api.request(method, `${BASE}/${id}`, { key: tenant.key, headers, body });
        const what = `${method} ${JSON.stringify(headers)}`;
        expect(res.status, what).to.equal(404);
        expect(res.body.code, what).to.equal('NOT_FOUND');
        expect(res.text, what).to.not.include('theirs');
        const unknown = await api.request(method, `${BASE}/${randomUUID()}`, {
          key: tenant.key,
          headers: { ...headers, 'idempotency-key': randomUUID() },
          body,
        });
        expect(notFoundShape(res), what).to.equal(notFoundShape(unknown));
      }
      const after = await read(other, foreign.id);
      expect(after.status).to.equal(200);
      expect(after.body).to.deep.equal(before.body);
      expect(after.body._version).to.equal('1');
    });

    it("never appears in the caller's list, and the caller's never appear in the owner's", async () => {
      const foreign = await create(other);
      const mine = await create(tenant);
      const myList = (await api.request('GET', `${BASE}?limit=100`, { key: tenant.key })).body.data.map(
        (e: { id: string }) => e.id,
      );
      const theirList = (await api.request('GET', `${BASE}?limit=100`, { key: other.key })).body.data.map(
        (e: { id: string }) => e.id,
      );
      expect(myList).to.include(mine.id).and.not.include(foreign.id);
      expect(theirList).to.include(foreign.id).and.not.include(mine.id);
    });

    it('is visible to every key of the owning account', async () => {
      const own = await create(tenant);
      const reader = await api.keyFor(tenant.accountId, ['webhook:read']);
      const res = await api.request('GET', `${BASE}/${own.id}`, { key: reader.key });
      expect(res.status).to.equal(200);
      expect(res.body.id).to.equal(own.id);
    });
  });

  describe('scopes', () => {
    const routes = (id: string): [string, string, unknown, string][] => [
      ['GET', BASE, undefined, 'webhook:read'],
      ['GET', `${BASE}/${id}`, undefined, 'webhook:read'],
      ['POST', BASE, buildEndpoint(), 'webhook:write'],
      ['PATCH', `${BASE}/${id}`, { status: 'PAUSED' }, 'webhook:write'],
      ['DELETE', `${BASE}/${id}`, undefined, 'webhook:write'],
    ];

    for (const [held, label] of [
      [['webhook:read'], 'webhook:read only'],
      [['webhook:write'], 'webhook:write only'],
      [['patient:read', 'patient:write', 'app_user:read', 'app_user:write', 'clinical:write'], 'every other scope'],
    ] as const) {
      it(`with ${label}, denies exactly the operations whose scope is missing (403, naming it) and changes nothing`, async () => {
        const own = await create(tenant);
        const { key } = await api.keyFor(tenant.accountId, [...held]);
        const stored = () =>
          api.mongo.db.collection('webhook_endpoints').countDocuments({ accountId: tenant.accountId });
        const count = await stored();
        for (const [method, path, body, scope] of routes(own.id)) {
          if ((held as readonly string[]).includes(scope)) continue;
          const res = await api.request(method, path, { key, body });
          expect(res.status, `${method} ${path}`).to.equal(403);
          expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
          expect(res.body).to.include({ code: 'PLATFORM_ACCESS_DENIED', status: 403, retryable: false });
          expect(res.body.details).to.deep.equal({ requiredScope: scope });
        }
        expect(await stored()).to.equal(count);
        const after = await read(tenant, own.id);
        expect(after.status).to.equal(200);
        expect(after.body).to.include({ _version: '1', status: 'ACTIVE' });
      });
    }

    it('allows reads with webhook:read and writes with webhook:write', async () => {
      const reader = await api.keyFor(tenant.accountId, ['webhook:read']);
      const writer = await api.keyFor(tenant.accountId, ['webhook:write']);
      const created = await api.request('POST', BASE, { key: writer.key, body: buildEndpoint() });
      expect(created.status).to.equal(201);
      expect((await api.request('GET', `${BASE}/${created.body.id}`, { key: reader.key })).status).to.equal(200);
      expect((await api.request('GET', BASE, { key: reader.key })).status).to.equal(200);
      expect(
        (await api.request('PATCH', `${BASE}/${created.body.id}`, { key: writer.key, body: { status: 'PAUSED' } }))
          .status,
      ).to.equal(200);
      expect((await api.request('DELETE', `${BASE}/${created.body.id}`, { key: writer.key })).status).to.equal(204);
    });

    it('answers 403 for a missing scope whether or not the endpoint exists', async () => {
      const reader = await api.keyFor(tenant.accountId, ['webhook:read']);
      const foreign = await create(other);
      const answers = [];
      for (const id of [randomUUID(), foreign.id, 'not-a-uuid']) {
        const res = await api.request('DELETE', `${BASE}/${id}`, { key: reader.key });
        expect(res.status).to.equal(403);
        answers.push(JSON.stringify([res.body.detail, res.body.details]));
      }
      expect(new Set(answers).size).to.equal(1);
      expect((await read(other, foreign.id)).status).to.equal(200);
    });
  });

  describe('credentials', () => {
    it('answers 401 with a Bearer challenge without a key, with an unknown key, and with a revoked key', async () => {
      const own = await create(tenant);
      const extra = await api.keyFor(tenant.accountId, ['webhook:read', 'webhook:write']);
      expect((await api.admin('DELETE', `/api-keys/${extra.keyId}`)).status).to.equal(204);
      const cases: [string | undefined, string][] = [
        [undefined, 'Bearer realm="portico"'],
        [`sk_${'A'.repeat(40)}`, 'Bearer realm="portico", error="invalid_token"'],
        [extra.key, 'Bearer realm="portico", error="invalid_token"'],
      ];
      for (const [key, challenge] of cases) {
        for (const [method, path, body] of [
          ['GET', BASE],
          ['GET', `${BASE}/${own.id}`],
          ['POST', BASE, buildEndpoint()],
          ['PATCH', `${BASE}/${own.id}`, { status: 'PAUSED' }],
          ['DELETE', `${BASE}/${own.id}`],
        ] as const) {
          const res = await api.request(method, path, { ...(key !== undefined && { key }), body });
          expect(res.status, `${method} ${path} ${key}`).to.equal(401);
          expect(res.body.code).to.equal('UNAUTHORIZED');
          expect(res.headers.get('www-authenticate')).to.equal(challenge);
        }
      }
      expect((await read(tenant, own.id)).body._version).to.equal('1');
    });
  });
});
