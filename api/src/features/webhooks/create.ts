// Webhooks, built (docs/architecture.md, "One shape for a feature"): the endpoints' store, with its cache, the
// deliveries, the dispatcher that delivers the events features recorded (features/events), and the services of
// the platform surface.
import type dns from 'node:dns';
import { CursorCodec } from '../../shared/http/cursor.js';
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import type { AccountStore } from '../accounts/index.js';
import type { Events } from '../events/index.js';
import { attemptAgents } from './delivery/attempt.js';
import { DeliveryRepository } from './delivery/deliveries.js';
import { PER_ENDPOINT_IN_FLIGHT } from './delivery/delivery-runner.js';
import { Dispatcher } from './delivery/dispatcher.js';
import { RedisPermits } from './delivery/permits.js';
import { WebhookDeliveryService } from './delivery-service.js';
import { EndpointOperationLimits, RECOVER_POLICY, TEST_POLICY } from './operation-limits.js';
import { WebhookEndpointService } from './service.js';
import { WebhookEndpointRepository } from './store.js';
import type { Resolver } from './url-policy.js';

export interface WebhookUses {
  accounts: AccountStore;
  events: Events;
  /** DNS for endpoint URL checks; tests pass a fixed table. */
  resolve: Resolver;
  /** DNS for deliveries (the connect-time check); tests pass a fixed table. */
  lookup: typeof dns.lookup | undefined;
}

export async function createWebhooks(
  infrastructure: Infrastructure,
  { accounts, events, resolve, lookup }: WebhookUses,
) {
  const { config, db, longDb, locks, caches, clock, logger, registry, redis } = infrastructure;
  const endpoints = new WebhookEndpointRepository(
    db,
    locks,
    caches.cache('webhook-endpoints', { max: 10_000, ttlMs: 60_000 }),
  );
  const deliveries = new DeliveryRepository(db, locks);
  await Promise.all([endpoints.init(longDb), deliveries.init(longDb)]);
  const dispatcher = new Dispatcher({
    outbox: events.background.outbox,
    events: events.background.queue,
    recovery: events.background.recovery,
    // The dispatcher scans and purges whole collections: with the deadline of long operations.
    deliveries: new DeliveryRepository(longDb, locks),
    endpoints,
    signals: events.signals,
    clock,
    logger,
    registry,
    settings: config.webhooks,
    agents: attemptAgents(config.webhookAllowPrivateUrls, lookup),
    // The per-endpoint cap, shared by replicas: a permit is held at most for an attempt's deadline and a margin.
    ...(redis && {
      permits: new RedisPermits(redis, PER_ENDPOINT_IN_FLIGHT, config.webhooks.timeoutMs + 5_000, logger),
    }),
  });
  const cursors = new CursorCodec(config.cursorSecret);
  return {
    endpoints,
    deliveries,
    dispatcher,
    endpointService: new WebhookEndpointService({
      endpoints,
      accounts,
      cursors,
      urlPolicy: { allowPrivate: config.webhookAllowPrivateUrls, resolve },
      deliveries,
      clock,
    }),
    deliveryService: new WebhookDeliveryService({
      endpoints,
      deliveries,
      outbox: events.outbox,
      events: events.queue,
      signals: events.signals,
      cursors,
      clock,
      limits: new EndpointOperationLimits({
        db,
        locks,
        recover: infrastructure.limiter(RECOVER_POLICY),
        test: infrastructure.limiter(TEST_POLICY),
        clock,
      }),
    }),
  };
}
