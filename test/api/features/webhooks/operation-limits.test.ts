// What one endpoint's owner can make Portico send is bounded: test events 10 a minute, recovers 10 an hour and
// one at a time, per endpoint (on an injected clock; the buckets are in process without Redis).
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { withTestApi, type TestApi, type Tenant } from '../../../../testkit/api.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { WEBHOOKS } from '../../../../testkit/webhooks.js';

describe('platform: limits on webhook test events and recovers', () => {
  let api: TestApi;
  let tenant: Tenant;
  const clock = new ManualClock(new Date('2026-11-20T10:00:00.000Z'));
  withTestApi((started) => ({ api, tenant } = started), { clock, env: { PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: 'true' } });

  const endpoint = async () =>
    (
      await api.request('POST', WEBHOOKS, {
        key: tenant.key,
        body: { url: 'http://127.0.0.1:9999/in', eventTypes: ['patient.created'] },
      })
    ).body.id as string;
  const test = (id: string) => api.request('POST', `${WEBHOOKS}/${id}/test`, { key: tenant.key });
  const recover = (id: string, headers: Record<string, string> = {}) =>
    api.request('POST', `${WEBHOOKS}/${id}/recover`, {
      key: tenant.key,
      body: { since: new Date(clock.now().getTime() - 3_600_000).toISOString() },
      headers,
    });

  it('takes 10 test events a minute per endpoint, then 429 with Retry-After and the RateLimit fields', async () => {
    const [id, other] = [await endpoint(), await endpoint()];
    for (let i = 0; i < 10; i++) expect((await test(id)).status).to.equal(202);
    const refused = await test(id);
    expect(refused.status).to.equal(429);
    expect(refused.body).to.include({ code: 'RATE_LIMITED', retryable: true });
    expect(refused.headers.get('retry-after')).to.equal('6');
    expect(refused.headers.get('ratelimit-policy')).to.equal('"test";q=10;w=60');
    expect(refused.headers.get('ratelimit')).to.equal('"test";r=0;t=6');
    expect((await test(other)).status, 'another endpoint has a bucket of its own').to.equal(202);
    clock.advance(6_000);
    expect((await test(id)).status, 'a token back after 6 s').to.equal(202);
    expect((await test(id)).status).to.equal(429);
  });

  it('takes 10 recovers an hour per endpoint, then 429', async () => {
    const id = await endpoint();
    for (let i = 0; i < 10; i++) expect((await recover(id)).status).to.equal(202);
    const refused = await recover(id);
    expect(refused.status).to.equal(429);
    expect(refused.headers.get('retry-after')).to.equal('360');
    expect(refused.headers.get('ratelimit-policy')).to.equal('"recover";q=10;w=3600');
    clock.advance(360_000);
    expect((await recover(id)).status).to.equal(202);
  });

  it('runs one recover at a time per endpoint: 409 while another holds it (not replayed), and takes over one whose replica died', async () => {
    const id = await endpoint();
    const runs = api.mongo.db.collection<{ _id: string; owner: string; until: Date }>('webhook_recover_runs');
    // Another replica's recover, running.
    await runs.insertOne({ _id: id, owner: 'elsewhere', until: new Date(clock.now().getTime() + 60_000) });
    const key = `recover-${randomUUID()}`;
    const busy = await recover(id, { 'idempotency-key': key });
    expect(busy.status).to.equal(409);
    expect(busy.body).to.include({ code: 'CONFLICT' });
    expect(busy.headers.get('retry-after')).to.equal('5');
    // It finished: the same request, with the same key, now runs (the 409 was not stored as the key's outcome).
    await runs.deleteOne({ _id: id });
    expect((await recover(id, { 'idempotency-key': key })).status).to.equal(202);
    expect(await runs.countDocuments({ _id: id }), 'the lease is handed back').to.equal(0);
    // A recover whose replica died leaves its lease; once it has ended, the next one takes over.
    await runs.insertOne({ _id: id, owner: 'dead', until: new Date(clock.now().getTime() - 1) });
    expect((await recover(id)).status).to.equal(202);
  });
});
