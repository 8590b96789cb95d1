import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { TestApi, type Response, type Tenant } from '../../../../testkit/api.js';
import { buildEndpoint } from '../../../../testkit/factories.js';

const BASE = '/api/platform/v1/webhook-endpoints';
const QUOTA = 100;
const BATCH = 25;

describe('platform: webhook endpoints — 100 live endpoints per account', () => {
  let api: TestApi;

  before(async () => {
    api = await TestApi.start();
  });
  after(() => api.close());

  const create = (t: Tenant, body: unknown = buildEndpoint(), headers: Record<string, string> = {}) =>
    api.request('POST', BASE, { key: t.key, body, headers });
  /** Creates `count` endpoints in parallel batches of 25; every one must succeed. */
  const fill = async (t: Tenant, count: number): Promise<string[]> => {
    const ids: string[] = [];
    for (let done = 0; done < count; done += BATCH) {
      const responses = await Promise.all(Array.from({ length: Math.min(BATCH, count - done) }, () => create(t)));
      for (const res of responses) {
        expect(res.status, res.text).to.equal(201);
        ids.push(res.body.id);
      }
    }
    return ids;
  };
  /** Live endpoints as the tenant sees them (one full page) and as stored. */
  const live = async (t: Tenant) => {
    const page = await api.request('GET', `${BASE}?limit=100`, { key: t.key });
    const stored = await api.mongo.db
      .collection('webhook_endpoints')
      .countDocuments({ accountId: t.accountId, deletedAt: null });
    return { listed: page.body.data.length as number, more: page.body.pagination.hasMore as boolean, stored };
  };
  const expectLimitExceeded = (res: Response) => {
    expect(res.status, `${res.status} ${res.body?.code ?? `created ${res.body?.id}`}`).to.equal(409);
    expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect(res.body).to.include({ code: 'LIMIT_EXCEEDED', status: 409, retryable: false });
    expect(res.headers.get('location')).to.equal(null);
  };

  it('refuses the 101st endpoint with 409 LIMIT_EXCEEDED; deleting one frees exactly one slot', async () => {
    const t = await api.tenant();
    const ids = await fill(t, QUOTA);
    expectLimitExceeded(await create(t));
    expect(await live(t)).to.deep.equal({ listed: 100, more: false, stored: 100 });

    expect((await api.request('DELETE', `${BASE}/${ids[0]}`, { key: t.key })).status).to.equal(204);
    expect((await create(t)).status).to.equal(201);
    expectLimitExceeded(await create(t));
    expect(await live(t)).to.deep.equal({ listed: 100, more: false, stored: 100 });
  });

  it('counts paused and disabled endpoints as live', async () => {
    const t = await api.tenant();
    const ids = await fill(t, QUOTA);
    await api.request('PATCH', `${BASE}/${ids[1]}`, { key: t.key, body: { status: 'PAUSED' } });
    await api.mongo.db.collection('webhook_endpoints').updateOne({ id: ids[2] }, { $set: { status: 'DISABLED' } });
    expectLimitExceeded(await create(t));
  });

  it('does not overshoot when 12 creates race for the last 5 slots', async () => {
    const t = await api.tenant();
    await fill(t, QUOTA - 5);
    const responses = await Promise.all(Array.from({ length: 12 }, () => create(t)));
    const statuses = responses.map((r) => r.status);
    expect(
      statuses.filter((s) => s === 201),
      statuses.join(),
    ).to.have.length(5);
    for (const res of responses.filter((r) => r.status !== 201)) expectLimitExceeded(res);
    expect(await live(t)).to.deep.equal({ listed: 100, more: false, stored: 100 });
  });

  it('does not overshoot when deletes and creates race at the limit', async () => {
    const t = await api.tenant();
    const ids = await fill(t, QUOTA);
    const responses = await Promise.all([
      ...ids.slice(0, 3).map((id) => api.request('DELETE', `${BASE}/${id}`, { key: t.key })),
      ...ids.slice(0, 3).map((id) => api.request('DELETE', `${BASE}/${id}`, { key: t.key })),
      ...Array.from({ length: 8 }, () => create(t)),
    ]);
    const deletes = responses.slice(0, 6).map((r) => r.status);
    expect(
      deletes.filter((s) => s === 204),
      `each endpoint deleted once: ${deletes.join()}`,
    ).to.have.length(3);
    const after = await live(t);
    expect(after.stored).to.be.at.most(100);
    const fillUp = await Promise.all(Array.from({ length: 10 }, () => create(t)));
    expect((await live(t)).stored, fillUp.map((r) => r.status).join()).to.equal(100);
  });

  it('does not spend slots on refused creates', async () => {
    const t = await api.tenant();
    await fill(t, QUOTA - 1);
    const refused = await Promise.all([
      create(t, buildEndpoint({ url: 'https://internal.example.test/x' })),
      create(t, buildEndpoint({ url: 'http://hooks.example.test/x' })),
      create(t, buildEndpoint({ eventTypes: ['*', 'patient.created'] })),
      create(t, buildEndpoint({ url: 'https://nowhere.invalid/x' })),
    ]);
    for (const res of refused) expect(res.status).to.equal(400);
    expect((await create(t)).status).to.equal(201);
    expectLimitExceeded(await create(t));
  });

  it('keeps the quota per account', async () => {
    const [full, fresh] = await Promise.all([api.tenant(), api.tenant()]);
    await fill(full, QUOTA);
    expectLimitExceeded(await create(full));
    expect((await create(fresh)).status).to.equal(201);
  });

  it('replays a stored LIMIT_EXCEEDED for the same Idempotency-Key even after a slot frees up', async () => {
    const t = await api.tenant();
    const ids = await fill(t, QUOTA);
    const body = buildEndpoint();
    const key = randomUUID();
    const first = await create(t, body, { 'idempotency-key': key });
    expectLimitExceeded(first);
    expect((await api.request('DELETE', `${BASE}/${ids[0]}`, { key: t.key })).status).to.equal(204);
    const again = await create(t, body, { 'idempotency-key': key });
    expect(again.status).to.equal(409);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.text).to.equal(first.text);
    expect((await live(t)).stored).to.equal(99);
    expect((await create(t, body, { 'idempotency-key': randomUUID() })).status).to.equal(201);
  });
});
