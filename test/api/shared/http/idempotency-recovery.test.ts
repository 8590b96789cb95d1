// Exactly once across faults (docs/api.md, "Rules every operation follows"): idempotency records survive Redis losing
// everything, a store that fails between a change and recording its outcome, a server that dies there, and replicas
// racing on a key.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { Collection, MongoNetworkError } from 'mongodb';
import { ADMIN_TOKEN, TestApi, withTestApi, type Tenant } from '../../../../testkit/api.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { patchStore } from '../../../../testkit/idempotency.js';
import { buildEndpoint, buildPatient } from '../../../../testkit/factories.js';
import { testRedisUrl } from '../../../../testkit/services.js';
import { until } from '../../../../testkit/until.js';
import { LEASE_MS } from '../../../../api/src/shared/http/idempotency.js';
import { DependencyUnavailableError } from '#core/errors.js';

const PATIENTS = '/api/platform/v1/patients';
const ENDPOINTS = '/api/platform/v1/webhook-endpoints';
const newKey = () => `idem-${randomUUID()}`;

const countPatients = (api: TestApi, tenant: Tenant) =>
  api.mongo.db.collection('patients').countDocuments({ tenantId: tenant.accountId });

/** A request over fetch that the test can abandon (the client of a server that stopped answering). */
function send(
  api: TestApi,
  method: string,
  path: string,
  credential: string,
  idempotencyKey: string,
  body?: unknown,
  signal?: AbortSignal,
) {
  const headers: Record<string, string> = { authorization: `Bearer ${credential}`, 'idempotency-key': idempotencyKey };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return fetch(api.url + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
}

/** Requests the API has finished handling (their clients may have left first), as its metrics count them. */
async function handled(api: TestApi): Promise<number> {
  const metric = await api.services.registry.getSingleMetric('http_requests_total')!.get();
  return metric.values.reduce((sum, { value }) => sum + value, 0);
}

describe('http: idempotency across faults', () => {
  describe('Redis loses everything', () => {
    let api: TestApi;
    let tenant: Tenant;
    withTestApi((started) => ({ api, tenant } = started), { redis: true });

    it('replays the stored outcome after FLUSHALL and creates nothing new', async () => {
      const key = newKey();
      const body = buildPatient();
      const first = await send(api, 'POST', PATIENTS, tenant.key, key, body);
      const firstText = await first.text();
      expect(first.status).to.equal(201);
      const before = await countPatients(api, tenant);

      const redis = new Redis(testRedisUrl());
      try {
        await redis.flushall();
      } finally {
        redis.disconnect();
      }
      const again = await send(api, 'POST', PATIENTS, tenant.key, key, body);
      expect(again.status).to.equal(201);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(await again.text()).to.equal(firstText);
      expect(await countPatients(api, tenant)).to.equal(before);
    });
  });

  describe('the store fails between the change and recording its outcome', () => {
    let api: TestApi;
    let tenant: Tenant;
    const clock = new ManualClock();
    withTestApi((started) => ({ api, tenant } = started), { clock });

    it('answers the success (never a retryable error), records it in the background, and a retry does not execute again', async () => {
      const key = newKey();
      const body = buildPatient();
      const before = await countPatients(api, tenant);
      let failures = 0;
      const restore = patchStore(api, 'complete', (complete) => async (...args) => {
        if (failures++ === 0) throw new MongoNetworkError('connection reset (injected)');
        return complete(...args);
      });
      try {
        const first = await send(api, 'POST', PATIENTS, tenant.key, key, body);
        const firstText = await first.text();
        expect(first.status).to.equal(201);
        expect(await countPatients(api, tenant)).to.equal(before + 1);

        // Right away: the outcome is not recorded yet, so the key is busy (retryable, nothing runs).
        const soon = await send(api, 'POST', PATIENTS, tenant.key, key, body);
        if (soon.status === 409)
          expect(await soon.json()).to.include({ code: 'IDEMPOTENCY_KEY_IN_USE', retryable: true });
        else expect(soon.status).to.equal(201);
        expect(await countPatients(api, tenant)).to.equal(before + 1);

        await until(
          'the background completion',
          async () => (await api.mongo.db.collection('idempotency_records').countDocuments({ state: 'running' })) === 0,
        );
        const later = await send(api, 'POST', PATIENTS, tenant.key, key, body);
        expect(later.status).to.equal(201);
        expect(later.headers.get('idempotent-replayed')).to.equal('true');
        expect(await later.text()).to.equal(firstText);
        expect(await countPatients(api, tenant)).to.equal(before + 1);
      } finally {
        restore();
      }
    });

    it('when the outcome never gets recorded, a retry after the lease is told the request executed (not retryable) and nothing runs twice', async () => {
      const key = newKey();
      const body = buildPatient();
      const before = await countPatients(api, tenant);
      // The store refuses this request's outcome every time (its background retries included).
      let refused: unknown;
      let failures = 0;
      const restore = patchStore(api, 'complete', (complete) => async (scope, owner, done) => {
        refused ??= done;
        if (done === refused) {
          failures++;
          throw new MongoNetworkError('connection reset (injected)');
        }
        return complete(scope, owner, done);
      });
      after(restore);
      const first = await send(api, 'POST', PATIENTS, tenant.key, key, body);
      await until('the first background attempt', () => failures >= 2);
      expect(first.status).to.equal(201);
      clock.advance(LEASE_MS + 1_000);
      const retry = await send(api, 'POST', PATIENTS, tenant.key, key, body);
      expect(retry.status).to.equal(409);
      expect(await retry.json()).to.include({ code: 'IDEMPOTENCY_KEY_EXECUTED', retryable: false, status: 409 });
      expect(await countPatients(api, tenant)).to.equal(before + 1);
      const again = await send(api, 'POST', PATIENTS, tenant.key, key, body);
      expect(again.status).to.equal(409);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(await countPatients(api, tenant)).to.equal(before + 1);
    });

    it('hands a failed claim back in the background when the store refuses at first, so a retry soon executes', async () => {
      const key = newKey();
      const body = buildPatient();
      const before = await countPatients(api, tenant);
      // The first recovery point cannot be recorded (nothing was written: the key is free again), and
      // handing the claim back fails once. The clock stands still, so only the hand-back can free the key.
      let targets = 0;
      let releases = 0;
      const restoreTarget = patchStore(api, 'addTarget', (addTarget) => async (...args) => {
        if (targets++ === 0) throw new MongoNetworkError('connection reset (injected)');
        return addTarget(...args);
      });
      const restoreRelease = patchStore(api, 'release', (release) => async (...args) => {
        if (releases++ === 0) throw new MongoNetworkError('connection reset (injected)');
        return release(...args);
      });
      try {
        const first = await send(api, 'POST', PATIENTS, tenant.key, key, body);
        expect(first.status).to.equal(503);
        expect(await countPatients(api, tenant)).to.equal(before);
        await until(
          'the background hand-back',
          async () =>
            releases >= 2 &&
            (await api.mongo.db.collection('idempotency_records').countDocuments({ releasedBy: { $exists: true } })) >
              0,
        );
        const retry = await send(api, 'POST', PATIENTS, tenant.key, key, body);
        expect(retry.status).to.equal(201);
        expect(await countPatients(api, tenant)).to.equal(before + 1);
      } finally {
        restoreTarget();
        restoreRelease();
      }
    });
    it('holds the key after an ambiguous write whose undoing fails at a lock: the write may still land, and it runs once', async () => {
      const key = newKey();
      const body = buildEndpoint({ url: `https://hooks-${key.slice(-12)}.example.test/portico` });
      const endpoints = () =>
        api.mongo.db.collection('webhook_endpoints').countDocuments({ accountId: tenant.accountId });
      const before = await endpoints();
      // What a stalled database does to the insert: its answer is lost and it lands later. The quota slot it took is
      // then given back under the account's lock, which Redis refuses: the request failed at a lock, but not at the
      // lock of the write it announced last, so that write is not known to have stayed away.
      let land!: () => void;
      const landing = new Promise<void>((resolve) => (land = resolve));
      let late: Promise<unknown> | undefined;
      // eslint-disable-next-line @typescript-eslint/unbound-method -- called with its collection as `this`, restored below
      const insertOne = Collection.prototype.insertOne;
      Collection.prototype.insertOne = function (this: Collection, ...args: Parameters<typeof insertOne>) {
        if (this.collectionName !== 'webhook_endpoints' || late !== undefined) return insertOne.apply(this, args);
        late = landing.then(() => insertOne.apply(this, args));
        return Promise.reject(new MongoNetworkError('connection timed out (injected)'));
      } as typeof insertOne;
      const accounts = api.services.accounts as unknown as Record<string, unknown>;
      accounts.release = async (id: string) => {
        throw new DependencyUnavailableError('Redis', { lockNotTaken: `customer_accounts:${id}` });
      };
      try {
        const first = await send(api, 'POST', ENDPOINTS, tenant.key, key, body);
        expect(first.status).to.equal(503);
        const soon = await send(api, 'POST', ENDPOINTS, tenant.key, key, body);
        expect(soon.status).to.equal(409);
        expect(await soon.json()).to.include({ code: 'IDEMPOTENCY_KEY_IN_USE' });
        land();
        await late;
        expect(await endpoints()).to.equal(before + 1);
        // Judged once it settled: it executed.
        clock.advance(LEASE_MS);
        const later = await send(api, 'POST', ENDPOINTS, tenant.key, key, body);
        expect(later.status).to.equal(409);
        expect(await later.json()).to.include({ code: 'IDEMPOTENCY_KEY_EXECUTED' });
        expect(await endpoints()).to.equal(before + 1);
      } finally {
        Collection.prototype.insertOne = insertOne;
        delete accounts.release;
      }
    });
  });

  describe('the claim itself goes unanswered', () => {
    let api: TestApi;
    let tenant: Tenant;
    const clock = new ManualClock();
    withTestApi((started) => ({ api, tenant } = started), { clock });

    it('hands back a claim that landed after its request gave up, so a retry executes once the store answers (not after the lease)', async () => {
      const key = newKey();
      const body = buildPatient();
      const before = await countPatients(api, tenant);
      // What a stalled database does: the claim is written, but its answer never reaches the request (503).
      // The clock stands still, so the lease never ends: only the hand-back can free the key.
      let claims = 0;
      const restore = patchStore(api, 'claim', (claim) => async (...args) => {
        const existing = await claim(...args);
        if (claims++ === 0) throw new MongoNetworkError('connection timed out (injected)');
        return existing;
      });
      try {
        const first = await send(api, 'POST', PATIENTS, tenant.key, key, body);
        expect(first.status).to.equal(503);
        expect(
          await api.mongo.db.collection('idempotency_records').countDocuments({ state: 'running' }),
          'the claim that landed',
        ).to.be.at.least(1);
        const retry = await until(
          'a retry that executes',
          async () => {
            const res = await send(api, 'POST', PATIENTS, tenant.key, key, body);
            if (res.status === 409) expect(await res.json()).to.include({ code: 'IDEMPOTENCY_KEY_IN_USE' });
            return res.status === 409 ? undefined : res;
          },
          { intervalMs: 200 },
        );
        expect(retry.status).to.equal(201);
        expect(await countPatients(api, tenant)).to.equal(before + 1);
      } finally {
        restore();
      }
    });
  });

  describe('the server dies during the request', () => {
    let api: TestApi;
    let tenant: Tenant;
    const clock = new ManualClock();
    withTestApi((started) => ({ api, tenant } = started), { clock });

    /**
     * Sends a request whose server "dies" at the chosen step: from there on it neither answers, renews its
     * claim, nor writes. Returns once `reached` holds, with a way to wake the dead execution up again.
     */
    async function dieDuring(
      step: 'complete' | 'addTarget',
      request: (signal: AbortSignal) => Promise<Response>,
      reached: () => Promise<boolean>,
    ): Promise<() => void> {
      let wake: () => void = () => {};
      let entered = false;
      const restoreStep = patchStore(
        api,
        step,
        (original) =>
          (async (...args: unknown[]) => {
            restoreStep();
            entered = true;
            await new Promise<void>((resolve) => (wake = resolve));
            return (original as (...a: unknown[]) => Promise<unknown>)(...args);
          }) as never,
      );
      const restoreRenew = patchStore(api, 'renew', () => async () => true);
      const controller = new AbortController();
      request(controller.signal).catch(() => {});
      try {
        await until('the request to reach the step', async () => entered && (await reached()));
      } finally {
        controller.abort();
        restoreRenew();
      }
      return () => wake();
    }

    const routes: {
      name: string;
      act: (key: string, signal?: AbortSignal) => Promise<Response>;
      effects: () => Promise<number>;
    }[] = [
      {
        name: 'POST /patients',
        act: (key, signal) =>
          send(
            api,
            'POST',
            PATIENTS,
            tenant.key,
            key,
            { givenName: 'Ada', familyName: `Crash ${key.slice(-6)}` },
            signal,
          ),
        effects: () => countPatients(api, tenant),
      },
      {
        name: 'POST /webhook-endpoints',
        act: (key, signal) =>
          send(
            api,
            'POST',
            '/api/platform/v1/webhook-endpoints',
            tenant.key,
            key,
            buildEndpoint({ url: `https://hooks-${key.slice(-12)}.example.test/portico` }),
            signal,
          ),
        effects: () => api.mongo.db.collection('webhook_endpoints').countDocuments({ accountId: tenant.accountId }),
      },
      {
        name: 'POST /customer-accounts/{id}/api-keys (admin, a plain insert)',
        act: (key, signal) =>
          send(
            api,
            'POST',
            `/api/admin/v1/customer-accounts/${tenant.accountId}/api-keys`,
            ADMIN_TOKEN,
            key,
            { scopes: ['patient:read'], name: `crash ${key.slice(-6)}` },
            signal,
          ),
        effects: () => api.mongo.db.collection('api_keys').countDocuments({ accountId: tenant.accountId }),
      },
    ];

    for (const route of routes) {
      it(`${route.name}: after a change, a retry is told it executed (not retryable) and nothing runs twice`, async () => {
        const key = newKey();
        const before = await route.effects();
        await dieDuring(
          'complete',
          (signal) => route.act(key, signal),
          async () => (await route.effects()) === before + 1,
        );
        clock.advance(LEASE_MS + 1_000);
        const retry = await route.act(key);
        expect(retry.status).to.equal(409);
        expect(await retry.json()).to.include({ code: 'IDEMPOTENCY_KEY_EXECUTED', retryable: false });
        expect(await route.effects()).to.equal(before + 1);
      });
    }

    it('PATCH /customer-accounts/{id} (a change whatever the version): a retry after the change is told it executed', async () => {
      const account = await api.admin('POST', '/customer-accounts', { name: 'Crash account' });
      const key = newKey();
      const accounts = api.mongo.db.collection<{ _id: string; _version: number; status: string }>('customer_accounts');
      const act = (signal?: AbortSignal) =>
        send(
          api,
          'PATCH',
          `/api/admin/v1/customer-accounts/${account.body.id}`,
          ADMIN_TOKEN,
          key,
          { status: 'SUSPENDED' },
          signal,
        );
      await dieDuring(
        'complete',
        act,
        async () => (await accounts.findOne({ _id: account.body.id }))?.status === 'SUSPENDED',
      );
      const version = (await accounts.findOne({ _id: account.body.id }))!._version;
      clock.advance(LEASE_MS + 1_000);
      const retry = await act();
      expect(retry.status).to.equal(409);
      expect(await retry.json()).to.include({ code: 'IDEMPOTENCY_KEY_EXECUTED', retryable: false });
      expect((await accounts.findOne({ _id: account.body.id }))!._version).to.equal(version);
    });

    it('before any change: a retry after the lease executes once, and the dead execution, woken, writes nothing', async () => {
      const key = newKey();
      const body = buildPatient();
      const before = await countPatients(api, tenant);
      const records = api.mongo.db.collection('idempotency_records');
      // Dies at its first recovery point: the claim is there, no change is.
      const wake = await dieDuring(
        'addTarget',
        (signal) => send(api, 'POST', PATIENTS, tenant.key, key, body, signal),
        async () => (await records.countDocuments({ state: 'running' })) > 0,
      );
      const busy = await send(api, 'POST', PATIENTS, tenant.key, key, body);
      expect(busy.status).to.equal(409); // its lease still runs
      expect(((await busy.json()) as { code: string }).code).to.equal('IDEMPOTENCY_KEY_IN_USE');

      clock.advance(LEASE_MS + 1_000);
      const retry = await send(api, 'POST', PATIENTS, tenant.key, key, body);
      expect(retry.status).to.equal(201);
      expect(retry.headers.get('idempotent-replayed')).to.equal(null);
      const retryText = await retry.text();
      expect(await countPatients(api, tenant)).to.equal(before + 1);

      const finished = await handled(api);
      wake(); // the stalled execution resumes: its claim is gone, so it must not write
      await until('the woken request to end', async () => (await handled(api)) > finished);
      expect(await countPatients(api, tenant)).to.equal(before + 1);
      const replay = await send(api, 'POST', PATIENTS, tenant.key, key, body);
      expect(replay.headers.get('idempotent-replayed')).to.equal('true');
      expect(await replay.text()).to.equal(retryText);
    });
  });

  for (const redis of [false, true]) {
    describe(`two replicas sharing the database (${redis ? 'with' : 'without'} Redis)`, () => {
      let first: TestApi;
      let second: TestApi;
      let tenant: Tenant;
      before(async () => {
        first = await TestApi.start({ redis });
        second = await TestApi.start({ redis, replicaOf: first });
        tenant = await first.tenant();
      });
      after(async () => {
        await second?.close();
        await first?.close();
      });

      it('executes 20 parallel requests with one key exactly once', async () => {
        const key = newKey();
        const body = buildPatient();
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            send(i % 2 === 0 ? first : second, 'POST', PATIENTS, tenant.key, key, body),
          ),
        );
        const statuses = answers.map((a) => a.status);
        expect(
          statuses.every((s) => s === 201 || s === 409),
          statuses.join(),
        ).to.equal(true);
        const texts = await Promise.all(answers.map((a) => a.text()));
        expect(new Set(texts.filter((_, i) => statuses[i] === 201)).size).to.equal(1);
        expect(await countPatients(first, tenant)).to.equal(1);
        for (const api of [first, second]) {
          const replay = await send(api, 'POST', PATIENTS, tenant.key, key, body);
          expect(replay.status).to.equal(201);
          expect(replay.headers.get('idempotent-replayed')).to.equal('true');
        }
        expect(await countPatients(second, tenant)).to.equal(1);
      });
    });
  }
});
