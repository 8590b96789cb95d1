import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { TestApi, type Response, type Tenant } from '../../../../testkit/api.js';
import { buildEndpoint } from '../../../../testkit/factories.js';

const BASE = '/api/platform/v1/webhook-endpoints';
const N = 10;

const outcomes = (responses: Response[]) =>
  responses.map((r) => `${r.status}:${r.body?._version ?? r.body?.code ?? ''}`).join(' ');

/** Every response is either an executed/replayed success or "still executing"; returns the successes. */
function splitIdempotent(responses: Response[], success: number): { successes: Response[]; inUse: Response[] } {
  const successes = responses.filter((r) => r.status === success);
  const inUse = responses.filter((r) => r.status !== success);
  for (const res of inUse) {
    expect(res.status, res.text).to.equal(409);
    expect(res.body).to.include({ code: 'IDEMPOTENCY_KEY_IN_USE', retryable: true });
    expect(res.headers.get('retry-after')).to.equal('1');
  }
  expect(successes.length, 'at least the executing request succeeds').to.be.greaterThan(0);
  expect(
    successes.filter((r) => r.headers.get('idempotent-replayed') !== 'true'),
    'exactly one execution',
  ).to.have.length(1);
  for (const res of successes) {
    expect(res.text).to.equal(successes[0]!.text);
    for (const header of ['etag', 'location', 'content-type'])
      expect(res.headers.get(header), header).to.equal(successes[0]!.headers.get(header));
  }
  return { successes, inUse };
}

for (const redis of [false, true]) {
  describe(`platform: webhook endpoints — concurrency (${redis ? 'Redis' : 'in-process'} idempotency store)`, () => {
    let api: TestApi;

    before(async () => {
      api = await TestApi.start({ redis });
    });
    after(() => api.close());

    const stored = (t: Tenant) =>
      api.mongo.db.collection('webhook_endpoints').countDocuments({ accountId: t.accountId });
    const create = async (t: Tenant) => {
      const res = await api.request('POST', BASE, { key: t.key, body: buildEndpoint({ description: 'v1' }) });
      expect(res.status).to.equal(201);
      return res.body as { id: string };
    };

    it(`creates exactly one endpoint for ${N} parallel identical POSTs with one Idempotency-Key`, async () => {
      const t = await api.tenant();
      const body = buildEndpoint();
      const key = randomUUID();
      const send = () => api.request('POST', BASE, { key: t.key, body, headers: { 'idempotency-key': key } });
      const responses = await Promise.all(Array.from({ length: N }, send));
      const { successes } = splitIdempotent(responses, 201);
      expect(successes[0]!.body.secret).to.match(/^whsec_/);
      const late = await send();
      expect(late.status).to.equal(201);
      expect(late.headers.get('idempotent-replayed')).to.equal('true');
      expect(late.text).to.equal(successes[0]!.text);
      expect(await stored(t)).to.equal(1);
      const list = await api.request('GET', BASE, { key: t.key });
      expect(list.body.data.map((e: { id: string }) => e.id)).to.deep.equal([successes[0]!.body.id]);
    });

    it(`changes the version once for ${N} parallel identical PATCHes with one Idempotency-Key`, async () => {
      const t = await api.tenant();
      const { id } = await create(t);
      const key = randomUUID();
      const responses = await Promise.all(
        Array.from({ length: N }, () =>
          api.request('PATCH', `${BASE}/${id}`, {
            key: t.key,
            body: { status: 'PAUSED', description: 'v2' },
            headers: { 'idempotency-key': key },
          }),
        ),
      );
      const { successes } = splitIdempotent(responses, 200);
      expect(successes[0]!.body).to.include({ _version: '2', status: 'PAUSED' });
      expect((await api.request('GET', `${BASE}/${id}`, { key: t.key })).body._version).to.equal('2');
    });

    it(`deletes once for ${N} parallel DELETEs with one Idempotency-Key, every success being 204`, async () => {
      const t = await api.tenant();
      const { id } = await create(t);
      const key = randomUUID();
      const responses = await Promise.all(
        Array.from({ length: N }, () =>
          api.request('DELETE', `${BASE}/${id}`, { key: t.key, headers: { 'idempotency-key': key } }),
        ),
      );
      const { successes } = splitIdempotent(responses, 204);
      for (const res of successes) expect(res.text).to.equal('');
      expect((await api.request('GET', `${BASE}/${id}`, { key: t.key })).status).to.equal(404);
    });

    it('lets exactly one of 8 parallel PATCHes with If-Match "1" win; the others get 412', async () => {
      const t = await api.tenant();
      const { id } = await create(t);
      const responses = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          api.request('PATCH', `${BASE}/${id}`, {
            key: t.key,
            body: { description: `writer ${i}` },
            headers: { 'if-match': '"1"' },
          }),
        ),
      );
      const winners = responses.filter((r) => r.status === 200);
      expect(winners, outcomes(responses)).to.have.length(1);
      for (const res of responses.filter((r) => r.status !== 200))
        expect(res.body.code).to.equal('PRECONDITION_FAILED');
      const final = await api.request('GET', `${BASE}/${id}`, { key: t.key });
      expect(final.body._version).to.equal('2');
      expect(final.body.description).to.equal(winners[0]!.body.description);
    });

    it('loses no update among 8 parallel unconditional PATCHes', async () => {
      const t = await api.tenant();
      const { id } = await create(t);
      const responses = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          api.request('PATCH', `${BASE}/${id}`, { key: t.key, body: { description: `writer ${i}` } }),
        ),
      );
      const ok = responses.filter((r) => r.status === 200);
      for (const res of responses) expect(res.status, res.text).to.be.oneOf([200, 409]);
      const versions = ok.map((r) => r.body._version);
      expect(new Set(versions).size, `every success is its own version: ${outcomes(responses)}`).to.equal(ok.length);
      const final = await api.request('GET', `${BASE}/${id}`, { key: t.key });
      expect(final.body._version).to.equal(String(1 + ok.length));
      expect(ok.map((r) => r.body.description)).to.include(final.body.description);
    });

    it('deletes once among 8 parallel DELETEs with If-Match "1"; the others find it gone (404)', async () => {
      const t = await api.tenant();
      const { id } = await create(t);
      const responses = await Promise.all(
        Array.from({ length: 8 }, () =>
          api.request('DELETE', `${BASE}/${id}`, { key: t.key, headers: { 'if-match': '"1"' } }),
        ),
      );
      expect(
        responses.filter((r) => r.status === 204),
        outcomes(responses),
      ).to.have.length(1);
      for (const res of responses.filter((r) => r.status !== 204)) expect(res.body.code).to.equal('NOT_FOUND');
    });
  });
}

describe('platform: webhook endpoints — idempotency across two replicas sharing MongoDB and Redis', () => {
  let primary: TestApi;
  let replica: TestApi;
  let tenant: Tenant;

  before(async () => {
    primary = await TestApi.start({ redis: true });
    replica = await TestApi.start({ redis: true, env: { MONGODB_URI: primary.config.mongodbUri! } });
    tenant = await primary.tenant();
  });
  after(async () => {
    await replica.close();
    await primary.close();
  });

  it(`executes once when ${N} identical POSTs with one key are spread over both replicas`, async () => {
    const t = await primary.tenant();
    const body = buildEndpoint();
    const key = randomUUID();
    const responses = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        (i % 2 ? replica : primary).request('POST', BASE, { key: t.key, body, headers: { 'idempotency-key': key } }),
      ),
    );
    splitIdempotent(responses, 201);
    expect(await primary.mongo.db.collection('webhook_endpoints').countDocuments({ accountId: t.accountId })).to.equal(
      1,
    );
    const replay = await replica.request('POST', BASE, { key: t.key, body, headers: { 'idempotency-key': key } });
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
  });

  it('refuses the same key with another body on the other replica (422)', async () => {
    const key = randomUUID();
    expect(
      (
        await primary.request('POST', BASE, {
          key: tenant.key,
          body: buildEndpoint(),
          headers: { 'idempotency-key': key },
        })
      ).status,
    ).to.equal(201);
    const res = await replica.request('POST', BASE, {
      key: tenant.key,
      body: buildEndpoint(),
      headers: { 'idempotency-key': key },
    });
    expect(res.status).to.equal(422);
    expect(res.body.code).to.equal('IDEMPOTENCY_KEY_REUSED');
  });
});
