// The abuse limits on the SDK surface's keys (docs/api.md, Abuse limits): initiate counts against a bucket per
// (account, case-folded appUserId) and one per publishable key, checks the request before it takes a token,
// and shows both buckets on every answer; a suspended app's keys are refused and its sessions cannot be
// completed; unknown, revoked and suspended keys get one and the same 401.
import { expect } from 'chai';
import { generateKey, hashKey, KEY_MISS_TTL_MS } from '../../../../api/src/shared/http/keys.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { TestApi, type Response, type Tenant } from '../../../../testkit/api.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';
import { appOf, connectionOf, type AppKeys } from '../../../../testkit/apps.js';

const SDK = '/api/sdk/v1';

describe('sdk: initiate limits, suspended apps and unusable keys', () => {
  // The clock stands still, so no bucket refills during a test: every count below is exact.
  const clock = new ManualClock(new Date('2026-11-26T09:00:00.000Z'));
  let api: TestApi;
  let tenant: Tenant;
  let brandId: string;

  before(async () => {
    api = await TestApi.start({
      clock,
      env: { PORTICO_INITIATE_RATE_LIMIT: '3/60s', PORTICO_INITIATE_KEY_RATE_LIMIT: '6/60s' },
    });
    await publishTo(api, realSources());
    brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    tenant = await api.tenant();
  });
  after(() => api.close());
  // A full minute between tests: every bucket is full again.
  beforeEach(() => clock.advance(61_000));

  const initiate = (app: AppKeys, appUserId: unknown, brand = brandId) =>
    api.request('POST', `${SDK}/connect-sessions`, { key: app.pk, body: { appUserId, brandId: brand } });
  const fields = (res: Response) => ({
    policy: res.headers.get('ratelimit-policy'),
    limit: res.headers.get('ratelimit'),
  });
  const remaining = (res: Response, policy: string) =>
    Number(new RegExp(`"${policy}";r=(\\d+)`).exec(res.headers.get('ratelimit') ?? '')?.[1]);

  it('limits one publishable key across app users, and leaves another app’s key alone', async () => {
    const app = await appOf(api, tenant);
    const other = await appOf(api, tenant);
    for (let i = 0; i < 6; i++) {
      const res = await initiate(app, `user-${i}`);
      expect(res.status, res.text).to.equal(201);
      expect(fields(res).policy).to.equal('"initiate";q=3;w=60, "initiate-key";q=6;w=60');
      expect(remaining(res, 'initiate-key')).to.equal(5 - i);
    }
    const refused = await initiate(app, 'user-6');
    expect(refused.status).to.equal(429);
    expect(refused.body).to.include({ code: 'RATE_LIMITED' });
    expect(refused.body.detail).to.include('publishable key');
    expect(Number(refused.headers.get('retry-after'))).to.be.at.least(1);
    expect(remaining(refused, 'initiate-key')).to.equal(0);
    expect(remaining(refused, 'initiate'), 'the user bucket the key refused took nothing from').to.equal(3);
    expect(await api.mongo.db.collection('app_users').countDocuments({ appUserId: 'user-6' })).to.equal(0);
    expect((await initiate(other, 'user-6')).status).to.equal(201);
  });

  it('counts an appUserId in any case against one bucket, and a user’s refusal takes nothing from the key’s', async () => {
    const app = await appOf(api, tenant);
    for (const id of ['RL-x', 'rl-x', 'Rl-X']) expect((await initiate(app, id)).status, id).to.equal(201);
    const refused = await initiate(app, 'rL-x');
    expect(refused.status).to.equal(429);
    expect(refused.body.detail).to.include('app user');
    expect(remaining(refused, 'initiate')).to.equal(0);
    expect(remaining(refused, 'initiate-key')).to.equal(3);
    // Another user's bucket is its own.
    expect((await initiate(app, 'rl-y')).status).to.equal(201);
  });

  it('takes no token for a request it refuses on its face, and shows the buckets on every answer', async () => {
    const app = await appOf(api, tenant);
    const invalid = await initiate(app, 'not a valid id!');
    expect(invalid.status).to.equal(400);
    expect(fields(invalid).policy).to.equal('"initiate-key";q=6;w=60');
    expect(remaining(invalid, 'initiate-key')).to.equal(6);
    const unknownBrand = await initiate(app, 'ada', 'no-such-brand');
    expect(unknownBrand.status).to.equal(400);
    expect(fields(unknownBrand).policy).to.equal('"initiate";q=3;w=60, "initiate-key";q=6;w=60');
    expect([remaining(unknownBrand, 'initiate'), remaining(unknownBrand, 'initiate-key')]).to.deep.equal([3, 6]);
    expect(unknownBrand.headers.get('retry-after')).to.equal(null);
    // A TOMBSTONED user's 409 comes after the tokens were taken, and shows them taken.
    expect((await initiate(app, 'gone')).status).to.equal(201);
    const tombstone = await api.request('DELETE', `/api/platform/v1/app-users/gone`, { key: tenant.key });
    expect(tombstone.status, tombstone.text).to.equal(204);
    const conflict = await initiate(app, 'gone');
    expect(conflict.status).to.equal(409);
    expect([remaining(conflict, 'initiate'), remaining(conflict, 'initiate-key')]).to.deep.equal([1, 4]);
    // A replayed answer takes nothing, and shows the buckets as they stand.
    const headers = { 'Idempotency-Key': `replayed-${Date.now()}` };
    const first = await api.request('POST', `${SDK}/connect-sessions`, {
      key: app.pk,
      body: { appUserId: 'replayed', brandId },
      headers,
    });
    const replay = await api.request('POST', `${SDK}/connect-sessions`, {
      key: app.pk,
      body: { appUserId: 'replayed', brandId },
      headers,
    });
    expect([first.status, replay.status]).to.deep.equal([201, 201]);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect([remaining(replay, 'initiate'), remaining(replay, 'initiate-key')]).to.deep.equal([
      remaining(first, 'initiate'),
      remaining(first, 'initiate-key'),
    ]);
  });

  it('refuses a suspended app’s keys everywhere and its sessions’ completion, until it is active again', async () => {
    const app = await appOf(api, tenant);
    const connectionId = await connectionOf(api, tenant, app, 'suspended-app-user', brandId);
    const pending = await initiate(app, 'waiting');
    expect(pending.status).to.equal(201);
    const setStatus = async (status: string) =>
      expect((await api.admin('PATCH', `/apps/${app.appId}`, { status })).status).to.equal(200);
    const statuses = async () => [
      (await initiate(app, 'someone')).status,
      (await api.request('GET', `${SDK}/app-users/waiting/lifecycle`, { key: app.pk })).status,
      (await api.request('POST', `${SDK}/observations/_search`, { key: app.ak, body: { connectionId } })).status,
    ];
    expect(await statuses()).to.deep.equal([201, 200, 200]);
    await setStatus('SUSPENDED');
    expect(await statuses()).to.deep.equal([401, 401, 401]);
    // Under an Idempotency-Key too: the 409 is not kept, so the same request succeeds once the app is active.
    const headers = { 'Idempotency-Key': `complete-${pending.body.id}` };
    const complete = await api.request('POST', `/api/platform/v1/connect-sessions/${pending.body.id}/complete`, {
      key: tenant.key,
      headers,
    });
    expect(complete.status).to.equal(409);
    expect(complete.body.details).to.deep.equal({ appStatus: 'SUSPENDED' });
    await setStatus('ACTIVE');
    expect(await statuses()).to.deep.equal([201, 200, 200]);
    expect(
      (
        await api.request('POST', `/api/platform/v1/connect-sessions/${pending.body.id}/complete`, {
          key: tenant.key,
          headers,
        })
      ).status,
    ).to.equal(200);
  });

  it('answers an unknown, a revoked and a suspended key with one and the same 401', async () => {
    const suspendedAccount = await api.tenant();
    const ofSuspendedAccount = await appOf(api, suspendedAccount);
    expect(
      (await api.admin('PATCH', `/customer-accounts/${suspendedAccount.accountId}`, { status: 'SUSPENDED' })).status,
    ).to.equal(200);
    const ofSuspendedApp = await appOf(api, tenant);
    expect((await api.admin('PATCH', `/apps/${ofSuspendedApp.appId}`, { status: 'SUSPENDED' })).status).to.equal(200);
    const revokedApp = await appOf(api, tenant);
    const revokedKeyId = (await api.services.keys.findByHash(hashKey(revokedApp.pk)))!.keyId;
    expect((await api.admin('DELETE', `/api-keys/${revokedKeyId}`)).status).to.equal(204);
    const keys = {
      unknown: generateKey('pk'),
      revoked: revokedApp.pk,
      suspendedAccount: ofSuspendedAccount.pk,
      suspendedApp: ofSuspendedApp.pk,
    };
    const answers = new Set<string>();
    for (const [name, key] of Object.entries(keys)) {
      for (const res of [
        await api.request('GET', `${SDK}/app-users/someone/lifecycle`, { key }),
        await api.request('POST', `${SDK}/connect-sessions`, { key, body: { appUserId: 'someone', brandId } }),
      ]) {
        expect(res.status, name).to.equal(401);
        const { requestId: _requestId, instance: _instance, ...body } = res.body as Record<string, unknown>;
        answers.add(
          JSON.stringify({
            body,
            challenge: res.headers.get('www-authenticate'),
            limits: res.headers.get('ratelimit'),
          }),
        );
      }
    }
    // The apps' secret keys on the gateway (its node:http fast path, then Koa), the revoked app's ak_ revoked too.
    const revokedAk = (await api.services.keys.findByHash(hashKey(revokedApp.ak)))!.keyId;
    expect((await api.admin('DELETE', `/api-keys/${revokedAk}`)).status).to.equal(204);
    const secretKeys = {
      unknown: generateKey('ak'),
      revoked: revokedApp.ak,
      suspendedAccount: ofSuspendedAccount.ak,
      suspendedApp: ofSuspendedApp.ak,
    };
    for (const [name, key] of Object.entries(secretKeys)) {
      const res = await api.request('POST', `${SDK}/observations/_search`, {
        key,
        body: { connectionId: '00000000-0000-4000-8000-000000000000' },
      });
      expect(res.status, `ak_ ${name}`).to.equal(401);
      const { requestId: _requestId, instance: _instance, ...body } = res.body as Record<string, unknown>;
      answers.add(
        JSON.stringify({ body, challenge: res.headers.get('www-authenticate'), limits: res.headers.get('ratelimit') }),
      );
    }
    expect([...answers]).to.have.length(1);
  });

  it('remembers an unknown key for a moment: the same made-up key again reads nothing', async () => {
    const key = generateKey('pk');
    // Counts the loads the key cache makes (each one database read).
    const cache = (
      api.services.keys as unknown as {
        cache: { getOrLoad: (k: string, load: () => Promise<unknown>) => Promise<unknown> };
      }
    ).cache;
    const getOrLoad = cache.getOrLoad.bind(cache);
    let loads = 0;
    cache.getOrLoad = (k, load) => getOrLoad(k, () => ((loads += k === hashKey(key) ? 1 : 0), load()));
    const started = performance.now();
    try {
      for (let i = 0; i < 20; i++)
        expect((await api.request('GET', `${SDK}/app-users/someone/lifecycle`, { key })).status).to.equal(401);
    } finally {
      cache.getOrLoad = getOrLoad;
    }
    // One read, and one more for each time the memory of it ran out meanwhile (a slow machine).
    expect(loads)
      .to.be.at.least(1)
      .and.at.most(1 + Math.floor((performance.now() - started) / KEY_MISS_TTL_MS));
  });
});
