// WebhookEndpointStore's behaviour, held the same for the MongoDB repository (on the embedded database, with its
// cached live lists) and for the in-memory fake the service's unit tests use (docs/architecture.md, "Stores and
// fakes").
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { CacheHub } from '../../../../api/src/shared/infra/cache.js';
import { FakeWebhookEndpointStore } from '../../../../api/src/features/webhooks/fake-store.js';
import {
  WebhookEndpointRepository,
  type WebhookEndpoint,
  type WebhookEndpointStore,
} from '../../../../api/src/features/webhooks/store.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

const at = (minute: number) => new Date(Date.UTC(2026, 10, 20, 10, minute));

function endpoint(accountId: string, createdAt: Date, overrides: Partial<WebhookEndpoint> = {}): WebhookEndpoint {
  return {
    id: randomUUID(),
    accountId,
    url: 'https://hooks.example.org/portico',
    eventTypes: ['patient.created'],
    description: 'first',
    status: 'ACTIVE',
    secret: 'whsec_test',
    previousSecret: null,
    previousSecretExpiresAt: null,
    consecutiveFailures: 0,
    failingSince: null,
    failureResets: 0,
    lastDeliveryAttemptAt: null,
    lastSuccessfulDeliveryAt: null,
    createdAt,
    updatedAt: createdAt,
    version: 1,
    deletedAt: null,
    ...overrides,
  };
}

describeStore<WebhookEndpointStore>(
  'platform: webhook endpoint stores',
  {
    mongo: {
      name: 'WebhookEndpointRepository (MongoDB, cached live lists)',
      open: async ({ db, locks }) => {
        const caches = await CacheHub.create();
        const repository = new WebhookEndpointRepository(
          db,
          locks,
          caches.cache('webhook-endpoints', { max: 100, ttlMs: 60_000 }),
        );
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakeWebhookEndpointStore', open: async () => new FakeWebhookEndpointStore() },
  },
  ({ store, database, it, mongoOnly }) => {
    let account: string;
    beforeEach(() => {
      account = randomUUID();
    });

    it("lists the account's live endpoints newest first (createdAt, then id), in pages after a position", async () => {
      const same = at(5);
      const stored = [
        endpoint(account, at(1)),
        endpoint(account, same),
        endpoint(account, same),
        endpoint(account, at(9)),
      ];
      for (const e of stored) await store().insert(e);
      await store().insert(endpoint(randomUUID(), at(7)));
      const expected = [...stored]
        .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1))
        .map((e) => e.id);
      const first = await store().listLive(account, 2);
      expect(first.items.map((e) => e.id)).to.deep.equal(expected.slice(0, 2));
      expect(first.hasMore).to.equal(true);
      const last = first.items.at(-1)!;
      const second = await store().listLive(account, 2, { createdAt: last.createdAt, id: last.id });
      expect(second.items.map((e) => e.id)).to.deep.equal(expected.slice(2));
      expect(second.hasMore).to.equal(false);
    });

    it('updates at the version read, bumping it; a null description removes it; a stale version fails', async () => {
      const stored = endpoint(account, at(1));
      await store().insert(stored);
      // Cached now.
      expect(await store().readLive(account, stored.id)).to.deep.include({ description: 'first', version: 1 });
      const updated = await store().update(account, stored.id, 1, { status: 'PAUSED', description: null }, at(2));
      expect(updated).to.deep.include({ status: 'PAUSED', description: null, version: 2, updatedAt: at(2) });
      expect(await store().update(account, stored.id, 1, { status: 'ACTIVE' }, at(3))).to.equal(null);
      for (const read of [store().findLive(account, stored.id), store().readLive(account, stored.id)]) {
        expect(await read).to.deep.include({ status: 'PAUSED', description: null, version: 2 });
      }
      expect((await store().listLive(account, 10)).items[0]).to.deep.include({ status: 'PAUSED', version: 2 });
    });

    it('soft-deletes at the version read: gone from every read, and takes no further change', async () => {
      const stored = endpoint(account, at(1));
      await store().insert(stored);
      await store().listLive(account, 10); // cached now
      expect(await store().softDelete(account, stored.id, 2, at(2))).to.equal(false);
      expect(await store().softDelete(account, stored.id, 1, at(2))).to.equal(true);
      expect(await store().findLive(account, stored.id)).to.equal(null);
      expect(await store().readLive(account, stored.id)).to.equal(null);
      expect((await store().listLive(account, 10)).items).to.deep.equal([]);
      expect(await store().update(account, stored.id, 2, { status: 'PAUSED' }, at(3))).to.equal(null);
      expect(await store().softDelete(account, stored.id, 2, at(3))).to.equal(false);
    });

    it('counts outcomes only under the failure count they were made under: earlier ones just date it', async () => {
      const stored = endpoint(account, at(1));
      await store().insert(stored);
      const failure = (minute: number) => [{ at: at(minute), succeeded: false }];
      const before = { accountId: account, id: stored.id, failureResets: 0 };
      const counted = await store().recordOutcomes(before, failure(2), at(2));
      expect(counted).to.deep.include({ consecutiveFailures: 1, failingSince: at(2) });
      const rule = (minute: number) => ({ failures: 1, failingBefore: at(minute) });
      expect(await store().disable(before, rule(2), at(2))).to.deep.include({ status: 'DISABLED' });
      // The owner sets it ACTIVE again (the changes the service makes); an attempt made before is recorded after.
      const { version } = (await store().findLive(account, stored.id))!;
      const reset = { status: 'ACTIVE', consecutiveFailures: 0, failingSince: null, failureResets: 1 } as const;
      await store().update(account, stored.id, version, reset, at(4));
      const late = await store().recordOutcomes(before, failure(3), at(5));
      expect(late).to.deep.include({ ...reset, lastDeliveryAttemptAt: at(3) });
      expect(await store().disable(before, rule(5), at(5))).to.equal(null);
      expect(await store().disable(before, undefined, at(5))).to.equal(null); // nor a 410 answered before
      expect(await store().readLive(account, stored.id)).to.deep.include(reset);
      // Attempts made under the new count count as ever.
      const after = { ...before, failureResets: 1 };
      const recorded = await store().recordOutcomes(after, failure(6), at(6));
      expect(recorded).to.deep.include({ consecutiveFailures: 1, failingSince: at(6) });
      expect(await store().disable(after, rule(6), at(6))).to.deep.include({ status: 'DISABLED' });
    });

    mongoOnly(
      'reads an endpoint stored before failureResets existed as under the first count, 0, and counts',
      'a document an older release wrote',
      async () => {
        const { db } = database();
        const { failureResets: _absent, version, ...older } = endpoint(account, at(1));
        const document = { _id: `${account}/${older.id}` as never, ...older, _version: version };
        await db.collection('webhook_endpoints').insertOne(document);
        const ref = { accountId: account, id: older.id, failureResets: 0 };
        expect(await store().findLive(account, older.id)).to.deep.include({ failureResets: 0 });
        const counted = await store().recordOutcomes(ref, [{ at: at(2), succeeded: false }], at(2));
        expect(counted).to.deep.include({ consecutiveFailures: 1, failingSince: at(2) });
        const rule = { failures: 1, failingBefore: at(2) };
        expect(await store().disable(ref, rule, at(2))).to.deep.include({ status: 'DISABLED' });
      },
    );

    it("does not reach another account's endpoint by id", async () => {
      const stored = endpoint(account, at(1));
      await store().insert(stored);
      const other = randomUUID();
      expect(await store().findLive(other, stored.id)).to.equal(null);
      expect(await store().update(other, stored.id, 1, { status: 'PAUSED' }, at(2))).to.equal(null);
      expect(await store().softDelete(other, stored.id, 1, at(2))).to.equal(false);
      expect(await store().findLive(account, stored.id)).to.deep.include({ status: 'ACTIVE', version: 1 });
    });

    it('refuses an id that exists in the account (duplicate key)', async () => {
      const stored = endpoint(account, at(1));
      await store().insert(stored);
      const error = await store()
        .insert({ ...stored, description: 'second' })
        .catch((e: unknown) => e);
      expect(error).to.have.property('code', 11000);
      expect(await store().findLive(account, stored.id)).to.deep.equal(stored);
    });

    it('gives every live endpoint of the account newest first, and sees a new one after a cached read', async () => {
      const older = endpoint(account, at(1));
      await store().insert(older);
      expect((await store().allLive(account)).map((e) => e.id)).to.deep.equal([older.id]); // cached now
      const newer = endpoint(account, at(2));
      await store().insert(newer);
      await store().insert(endpoint(randomUUID(), at(3)));
      expect(await store().allLive(account)).to.deep.equal([newer, older]);
      expect(await store().readLive(account, newer.id)).to.deep.equal(newer);
      expect(await store().allLive(randomUUID())).to.deep.equal([]);
    });

    it('adds failures to the count: the run starts at its first failure, the latest attempt is kept', async () => {
      const stored = endpoint(account, at(0));
      await store().insert(stored);
      const failed = (minute: number) => ({ at: at(minute), succeeded: false });
      expect(
        await store().recordOutcomes(
          { accountId: account, id: stored.id, failureResets: 0 },
          [failed(2), failed(3)],
          at(4),
        ),
      ).to.deep.include({
        consecutiveFailures: 2,
        failingSince: at(2),
        lastDeliveryAttemptAt: at(3),
        lastSuccessfulDeliveryAt: null,
        version: 2,
        updatedAt: at(4),
      });
      // An outcome that arrives late adds to the count but moves neither the run's start nor the last attempt back.
      expect(
        await store().recordOutcomes({ accountId: account, id: stored.id, failureResets: 0 }, [failed(1)], at(5)),
      ).to.deep.include({
        consecutiveFailures: 3,
        failingSince: at(2),
        lastDeliveryAttemptAt: at(3),
        version: 3,
      });
      expect(await store().findLive(account, stored.id)).to.deep.include({
        consecutiveFailures: 3,
        failingSince: at(2),
      });
    });

    it('records a success as the end of the run: the count is the failures after it; both dates move on', async () => {
      const stored = endpoint(account, at(0), {
        consecutiveFailures: 4,
        failingSince: at(1),
        lastDeliveryAttemptAt: at(1),
      });
      await store().insert(stored);
      const outcomes = [
        { at: at(6), succeeded: true },
        { at: at(7), succeeded: false },
      ];
      expect(
        await store().recordOutcomes({ accountId: account, id: stored.id, failureResets: 0 }, outcomes, at(8)),
      ).to.deep.include({
        consecutiveFailures: 1,
        failingSince: at(7),
        lastDeliveryAttemptAt: at(7),
        lastSuccessfulDeliveryAt: at(6),
      });
      expect(
        await store().recordOutcomes(
          { accountId: account, id: stored.id, failureResets: 0 },
          [{ at: at(9), succeeded: true }],
          at(9),
        ),
      ).to.deep.include({ consecutiveFailures: 0, failingSince: null, lastSuccessfulDeliveryAt: at(9) });
      expect(await store().readLive(account, stored.id)).to.deep.include({
        consecutiveFailures: 0,
        failingSince: null,
        lastDeliveryAttemptAt: at(9),
      });
    });

    it("records no outcome for an endpoint that is gone or another account's", async () => {
      const stored = endpoint(account, at(0));
      await store().insert(stored);
      const outcomes = [{ at: at(1), succeeded: false }];
      expect(
        await store().recordOutcomes({ accountId: randomUUID(), id: stored.id, failureResets: 0 }, outcomes, at(1)),
      ).to.equal(null);
      expect(
        await store().recordOutcomes({ accountId: account, id: randomUUID(), failureResets: 0 }, outcomes, at(1)),
      ).to.equal(null);
      expect(await store().softDelete(account, stored.id, 1, at(2))).to.equal(true);
      expect(
        await store().recordOutcomes({ accountId: account, id: stored.id, failureResets: 0 }, outcomes, at(3)),
      ).to.equal(null);
    });

    it('disables an active endpoint only when the rule holds (failures, how long), at once without one', async () => {
      const failing = endpoint(account, at(0), { consecutiveFailures: 3, failingSince: at(2) });
      await store().insert(failing);
      expect(
        await store().disable(
          { accountId: account, id: failing.id, failureResets: 0 },
          { failures: 4, failingBefore: at(10) },
          at(11),
        ),
        'too few failures',
      ).to.equal(null);
      expect(
        await store().disable(
          { accountId: account, id: failing.id, failureResets: 0 },
          { failures: 3, failingBefore: at(1) },
          at(11),
        ),
        'failing too briefly',
      ).to.equal(null);
      expect(
        await store().disable(
          { accountId: account, id: failing.id, failureResets: 0 },
          { failures: 3, failingBefore: at(2) },
          at(11),
        ),
      ).to.deep.include({ status: 'DISABLED', version: 2, updatedAt: at(11) });
      expect(
        await store().disable({ accountId: account, id: failing.id, failureResets: 0 }, undefined, at(12)),
        'no longer active',
      ).to.equal(null);
      expect(await store().readLive(account, failing.id)).to.deep.include({ status: 'DISABLED', version: 2 });

      const healthy = endpoint(account, at(1));
      await store().insert(healthy);
      expect(
        await store().disable(
          { accountId: account, id: healthy.id, failureResets: 0 },
          { failures: 0, failingBefore: at(20) },
          at(11),
        ),
        'not failing',
      ).to.equal(null);
      expect(
        await store().disable({ accountId: randomUUID(), id: healthy.id, failureResets: 0 }, undefined, at(11)),
        'another account',
      ).to.equal(null);
      const paused = endpoint(account, at(2), { status: 'PAUSED' });
      await store().insert(paused);
      expect(
        await store().disable({ accountId: account, id: paused.id, failureResets: 0 }, undefined, at(11)),
        'paused',
      ).to.equal(null);
      expect(
        await store().disable({ accountId: account, id: healthy.id, failureResets: 0 }, undefined, at(11)),
      ).to.deep.include({ status: 'DISABLED' });
    });
  },
);
