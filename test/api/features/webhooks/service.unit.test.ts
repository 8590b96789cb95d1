// The webhook-endpoint service's rules, without HTTP or a database: the quota, URL checks before any
// change, merge-patch semantics, preconditions, races, and signed list cursors.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { FakeAccountStore } from '../../../../api/src/features/accounts/fake-store.js';
import type { Principal } from '../../../../api/src/shared/http/auth.js';
import { deliveryId, newAttemptId } from '../../../../api/src/features/webhooks/delivery/deliveries.js';
import type { FakeDeliveryStore } from '../../../../api/src/features/webhooks/delivery/fake-deliveries.js';
import { createFakeWebhooks, type FakeWebhookEndpointStore } from '../../../../api/src/features/webhooks/fake-store.js';
import { MAX_ENDPOINTS_PER_ACCOUNT } from '../../../../api/src/features/webhooks/schema.js';
import type { WebhookEndpointService } from '../../../../api/src/features/webhooks/service.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { rejection } from '../../../../testkit/expect.js';

const DNS: Record<string, string[]> = { 'hooks.example.org': ['93.184.215.14'], 'internal.example.org': ['10.0.0.7'] };

describe('platform: webhook-endpoint service (unit, fake stores)', () => {
  let clock: ManualClock;
  let endpoints: FakeWebhookEndpointStore;
  let accounts: FakeAccountStore;
  let deliveries: FakeDeliveryStore;
  let service: WebhookEndpointService;
  let principal: Principal;
  const body = (overrides = {}) => ({
    url: 'https://hooks.example.org/portico',
    eventTypes: ['patient.created' as const],
    ...overrides,
  });

  beforeEach(async () => {
    clock = new ManualClock(new Date('2026-11-20T10:00:00.000Z'));
    accounts = new FakeAccountStore();
    ({
      endpoints,
      deliveries,
      endpointService: service,
    } = createFakeWebhooks(clock, {
      accounts,
      resolve: async (host) =>
        DNS[host] ?? Promise.reject(Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' })),
      cursorSecret: 'unit-test-cursor-secret-0123456789abcdef',
    }));
    principal = { keyId: randomUUID(), kind: 'sk', accountId: randomUUID(), appId: null, scopes: new Set() };
    await accounts.insert({ id: principal.accountId, name: 'Acme', status: 'ACTIVE', createdAt: clock.now() });
  });

  describe('create', () => {
    it('creates an ACTIVE endpoint with a fresh whsec_ secret and takes one unit of quota', async () => {
      const created = await service.create(principal, body({ description: 'main' }));
      expect(created).to.deep.include({
        status: 'ACTIVE',
        consecutiveFailures: 0,
        version: 1,
        description: 'main',
        lastDeliveryAttemptAt: null,
      });
      expect(created.secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(accounts.usage(principal.accountId, 'webhookEndpoints')).to.equal(1);
    });

    it(`refuses live endpoint number ${MAX_ENDPOINTS_PER_ACCOUNT + 1} with LIMIT_EXCEEDED; a deletion frees a slot`, async () => {
      const made = [];
      for (let i = 0; i < MAX_ENDPOINTS_PER_ACCOUNT; i++) made.push(await service.create(principal, body()));
      expect(await rejection(service.create(principal, body()))).to.include({ code: 'LIMIT_EXCEEDED' });
      await service.delete(principal, made[0]!.id, undefined);
      expect(await service.create(principal, body())).to.have.property('status', 'ACTIVE');
    });

    it('gives the quota back when the insert fails', async () => {
      endpoints.insert = async () => Promise.reject(new Error('database down'));
      await service.create(principal, body()).catch(() => undefined);
      expect(accounts.usage(principal.accountId, 'webhookEndpoints')).to.equal(0);
    });

    it('refuses, before taking quota, a private destination and a "*" that does not stand alone', async () => {
      expect(await rejection(service.create(principal, body({ url: 'https://internal.example.org/x' })))).to.include({
        status: 400,
      });
      expect(await rejection(service.create(principal, body({ eventTypes: ['*', 'patient.created'] })))).to.include({
        status: 400,
      });
      expect(accounts.usage(principal.accountId, 'webhookEndpoints')).to.equal(0);
    });
  });

  describe('update', () => {
    it('changes only what differs: the same values keep the version; ACTIVE starts a new failure count', async () => {
      const created = await service.create(principal, body({ eventTypes: ['patient.created', 'patient.deleted'] }));
      expect(
        (await service.update(principal, created.id, { eventTypes: ['patient.deleted', 'patient.created'] }, undefined))
          .version,
      ).to.equal(1);
      clock.advance(1000);
      const paused = await service.update(principal, created.id, { status: 'PAUSED', description: 'later' }, undefined);
      expect(paused).to.deep.include({ status: 'PAUSED', description: 'later', version: 2, updatedAt: clock.now() });
      await endpoints.update(principal.accountId, created.id, 2, { consecutiveFailures: 4 }, clock.now()); // the delivery system's doing
      const active = await service.update(principal, created.id, { status: 'ACTIVE', description: null }, undefined);
      expect(active).to.deep.include({ status: 'ACTIVE', consecutiveFailures: 0, description: null, version: 4 });
      // A new count: outcomes of attempts made under the old one no longer count (store.ts, failureResets).
      expect([paused.failureResets, active.failureResets]).to.deep.equal([0, 1]);
      const again = await service.update(principal, created.id, { status: 'ACTIVE' }, undefined); // nothing to reset
      expect(again).to.deep.include({ version: 4, failureResets: 1 });
    });

    it('checks existence before If-Match, and If-Match before the URL', async () => {
      const created = await service.create(principal, body());
      expect(
        await rejection(service.update(principal, randomUUID(), {}, { kind: 'versions', versions: ['9'] })),
      ).to.include({ code: 'NOT_FOUND' });
      const error = await rejection(
        service.update(
          principal,
          created.id,
          { url: 'https://internal.example.org/x' },
          { kind: 'versions', versions: ['9'] },
        ),
      );
      expect(error).to.include({ code: 'PRECONDITION_FAILED' });
      expect(error.details).to.deep.equal({ currentVersion: '1' });
    });

    it('retries a lost race, then gives up with a conflict that is never stored for replay', async () => {
      const created = await service.create(principal, body());
      let attempts = 0;
      const update = endpoints.update.bind(endpoints);
      endpoints.update = async (...args) => (++attempts < 3 ? null : update(...args));
      expect((await service.update(principal, created.id, { description: 'won' }, undefined)).description).to.equal(
        'won',
      );
      expect(attempts).to.equal(3);
      endpoints.update = async () => (attempts++, null);
      const error = await rejection(service.update(principal, created.id, { description: 'lost' }, undefined));
      expect(error).to.include({ code: 'CONFLICT' });
      expect(error.options.storable).to.equal(false);
    });
  });

  describe('list', () => {
    it('walks every endpoint once, newest first, with cursors bound to the account', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        ids.unshift((await service.create(principal, body())).id);
        clock.advance(1000);
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await service.list(principal, 3, cursor);
        seen.push(...page.items.map((e) => e.id));
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      expect(seen).to.deep.equal(ids);

      const first = await service.list(principal, 3, undefined);
      const stranger = { ...principal, accountId: randomUUID() };
      expect(await rejection(service.list(stranger, 3, first.nextCursor!))).to.include({ status: 400 });
      expect(await rejection(service.list(principal, 3, `${first.nextCursor!}x`))).to.include({ status: 400 });
    });
  });

  describe('delete', () => {
    it('deletes at the current version and frees the quota once; then the endpoint is 404', async () => {
      const created = await service.create(principal, body());
      const eventId = randomUUID();
      const waiting = {
        id: deliveryId(eventId, created.id),
        accountId: principal.accountId,
        endpointId: created.id,
        eventId,
        eventType: 'patient.created' as const,
        attempt: 2,
        trigger: 'SCHEDULED' as const,
        nextAttemptAt: clock.now(),
        logId: newAttemptId(),
        createdAt: clock.now(),
      };
      await deliveries.enqueue([waiting]);
      await service.delete(principal, created.id, { kind: 'any' });
      expect(accounts.usage(principal.accountId, 'webhookEndpoints')).to.equal(0);
      // Its queued deliveries go too, each record saying why it was not made.
      const log = await deliveries.list(principal.accountId, created.id, { limit: 10 });
      expect(log.items.map((r) => [r.id, r.status, r.error])).to.deep.equal([
        [waiting.logId, 'FAILED', 'not attempted: the endpoint was deleted'],
      ]);
      expect(await rejection(service.delete(principal, created.id, undefined))).to.include({ code: 'NOT_FOUND' });
      expect(await rejection(service.get(principal, created.id))).to.include({ code: 'NOT_FOUND' });
      expect(accounts.usage(principal.accountId, 'webhookEndpoints')).to.equal(0);
    });
  });
});
