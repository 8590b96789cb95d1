// The composition root: repositories (with their indexes) and services, built once from the connections
// that main.ts (or a test) opened. Features never open connections of their own.
import type { Redis } from 'ioredis';
import type { Db } from 'mongodb';
import { CustomerAccountRepository } from './features/accounts/store.js';
import { ADMIN_CURSORS, AdminService } from './features/admin/service.js';
import { AppRepository } from './features/apps/store.js';
import { AppUserRepository } from './features/app-users/store.js';
import { AppUserService } from './features/app-users/service.js';
import { UserTransitions } from './features/app-users/transitions.js';
import { MemoryRateLimiter, RedisRateLimiter, type RatePolicy } from './shared/infra/rate-limit.js';
import { EndpointOperationLimits, RECOVER_POLICY, TEST_POLICY } from './features/webhooks/operation-limits.js';
import { SessionRepository } from './features/connect-sessions/store.js';
import { LinkTokenRepository } from './features/connect-sessions/link-token-store.js';
import { LinkTokenService } from './features/connect-sessions/link-tokens.js';
import { ObservationRepository } from './features/clinical/records/store.js';
import { IngestService } from './features/clinical/ingest/ingest-service.js';
import { GatewayService } from './features/clinical/gateway/service.js';
import { ConnectionIndexes } from './features/clinical/gateway/connection-indexes.js';
import { LocalGenerations, RedisGenerations } from './shared/infra/generations.js';
import { ConnectSessionService } from './features/connect-sessions/service.js';
import { InitiateLimits } from './features/connect-sessions/initiate-limits.js';
import { AuthorizationService } from './features/authz/check.js';
import { TupleRepository } from './features/authz/tuples.js';
import type { Clock } from '#core/clock.js';
import type { Config } from './config.js';
import type { Logger } from 'pino';
import { pino } from 'pino';
import { ActiveCatalog } from './features/catalog/active.js';
import { createConnections } from './features/connections/index.js';
import { zipCentroid } from '#core/catalog/geo.js';
import { ActiveEndpointHealth } from './features/catalog/endpoint-health.js';
import { EndpointHealthStore } from '#core/catalog/endpoint-health.js';
import { BrandSearchIndex } from './features/catalog/search/index.js';
import { SnapshotStore } from '#core/catalog/snapshots.js';
import { openObjectStorage } from '#core/object-storage/index.js';
import { CatalogAnswers } from './features/catalog/answers.js';
import { CatalogService } from './features/catalog/service.js';
import { CacheHub } from './shared/infra/cache.js';
import { documentLocksFor } from '#core/infra/locks.js';
import { readinessOf } from './readiness.js';
import { startSweeps } from './sweeps.js';
import { shutDown } from './shutdown.js';
import { ApiKeyRepository } from './features/credentials/store.js';
import { KEY_CACHE_TTL_MS, KEY_MISS_TTL_MS } from './shared/http/keys.js';
import { attemptAgents } from './features/webhooks/delivery/attempt.js';
import { DeliveryStore } from './features/webhooks/delivery/deliveries.js';
import { Dispatcher, PER_ENDPOINT_IN_FLIGHT } from './features/webhooks/delivery/dispatcher.js';
import { RedisPermits } from './features/webhooks/delivery/permits.js';
import { MongoEventQueue } from './features/events/event-queue.js';
import { Outbox } from './features/events/outbox.js';
import { OutboxRecovery } from './features/events/outbox-recovery.js';
import { createOutboxIndexes } from './features/events/outbox-collection.js';
import { WorkSignals } from './features/events/signals.js';
import { Registry, collectDefaultMetrics } from 'prom-client';
import type dns from 'node:dns';
import { CursorCodec } from './shared/http/cursor.js';
import { MongoIdempotencyStore } from './shared/http/idempotency-store.js';
import { PatientRepository } from './features/patients/store.js';
import { PatientService } from './features/patients/service.js';
import { WebhookEndpointRepository } from './features/webhooks/store.js';
import { WebhookEndpointService } from './features/webhooks/service.js';
import { WebhookDeliveryService } from './features/webhooks/delivery-service.js';
import { systemResolver, type Resolver } from './features/webhooks/url-policy.js';

export interface Connections {
  config: Config;
  /** The database with the request deadline (core/src/infra/mongo.ts). */
  db: Db;
  /** The same database with the deadline of long operations; default: db. */
  longDb?: Db;
  redis?: Redis;
  clock: Clock;
  /** DNS for webhook URL checks; tests pass a fixed table. */
  resolve?: Resolver;
  /** DNS for webhook deliveries (the connect-time check); tests pass a fixed table. */
  lookup?: typeof dns.lookup;
  logger?: Logger;
}

export type Services = Awaited<ReturnType<typeof buildServices>>;

export async function buildServices({
  config,
  db,
  longDb = db,
  redis,
  clock,
  resolve = systemResolver,
  lookup,
  logger = pino({ level: 'silent' }),
}: Connections) {
  const caches = await CacheHub.create(redis, (error) =>
    logger.warn({ err: error }, 'a cache invalidation could not be published; other replicas converge within the TTL'),
  );
  const locks = await documentLocksFor(db, redis);
  const minute = 60_000;
  const repositories = {
    // 10 s, like keys: bounds how long `portico admin update-account` run without REDIS_URL takes to reach running
    // replicas.
    accounts: new CustomerAccountRepository(db, locks, caches.cache('accounts', { max: 10_000, ttlMs: 10_000 })),
    // Short: a revocation made where no Redis carries it (the command line) still lands within 10 s.
    keys: new ApiKeyRepository(
      db,
      locks,
      caches.cache('api-keys', { max: 10_000, ttlMs: KEY_CACHE_TTL_MS, missTtlMs: KEY_MISS_TTL_MS }),
    ),
    // 10 s, like accounts: how long `portico admin update-app` run without REDIS_URL takes to reach running replicas.
    apps: new AppRepository(db, locks, caches.cache('apps', { max: 10_000, ttlMs: 10_000 })),
    tuples: new TupleRepository(db, locks, caches.cache('authz', { max: 100_000, ttlMs: minute })),
    patients: new PatientRepository(db, locks, caches.cache('patients', { max: 50_000, ttlMs: minute })),
    endpoints: new WebhookEndpointRepository(
      db,
      locks,
      caches.cache('webhook-endpoints', { max: 10_000, ttlMs: minute }),
    ),
    // The lifecycle probe's states, never-seen users included (they are polled the most).
    appUsers: new AppUserRepository(db, locks, caches.cache('app-user-states', { max: 200_000, ttlMs: minute })),
    sessions: new SessionRepository(db, locks),
    linkTokenStore: new LinkTokenRepository(db, locks),
    // The gateway's per-connection index is built from a whole connection: a long read.
    observations: new ObservationRepository(
      db,
      locks,
      longDb,
      clock,
      (error, connectionId) =>
        logger.warn(
          { err: error, connectionId },
          'applying a committed bundle failed; the next bundle or search of the connection applies it',
        ),
      // A checkpoint larger than the gateway would index for one connection is not kept (checkpoints.ts).
      (config.gatewayIndexMb * 1024 * 1024) / 4,
    ),
  };
  const outbox = new Outbox(db, locks, clock);
  const deliveries = new DeliveryStore(db, locks);
  // Idempotency records live beside the data they protect (docs/api.md, "Rules every operation follows"), with or
  // without Redis.
  const idempotencyStore = new MongoIdempotencyStore(db, locks);
  // Loaded in the background (start-up and polling), a whole snapshot at a time.
  const snapshots = new SnapshotStore(longDb, locks, clock);
  // Index builds can take long on a large collection.
  await Promise.all([
    ...Object.values(repositories).map((r) => r.init(longDb)),
    createOutboxIndexes(longDb),
    deliveries.init(longDb),
    snapshots.init(),
    idempotencyStore.init(longDb),
  ]);
  const storage = openObjectStorage(config.objectStorage);
  const activeCatalog = new ActiveCatalog(
    snapshots,
    config.catalog,
    (brands) => BrandSearchIndex.build(brands),
    logger,
  );
  // The operator's endpoint checks for the same catalog, published beside its snapshots (loaded in the background).
  const endpointHealth = new ActiveEndpointHealth(
    new EndpointHealthStore(longDb, locks, clock),
    config.catalog,
    logger,
  );

  const { accounts, keys, apps, tuples, patients, endpoints, appUsers, sessions, linkTokenStore, observations } =
    repositories;
  // Tokens that tell every replica's gateway a connection, a user's connections, an app or an ingest changed.
  const generations = redis ? new RedisGenerations(redis, logger) : new LocalGenerations();
  const transitions = new UserTransitions({ users: appUsers, outbox, generations, clock });
  const ingest = new IngestService({ users: appUsers, observations, generations, clock });
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const connections = await createConnections({
    config,
    db,
    longDb,
    locks,
    clock,
    logger,
    registry,
    users: appUsers,
    transitions,
    apps,
    accounts,
    sessions,
    ingest,
    outbox,
    brands: activeCatalog,
  });
  const users = new AppUserService({ users: appUsers, transitions, connections: connections.lifecycle });
  const limiterFor = (policy: RatePolicy) =>
    redis ? new RedisRateLimiter(redis, policy) : new MemoryRateLimiter(policy, clock);
  const initiateLimits = new InitiateLimits({
    perUser: { limiter: limiterFor(config.initiateRateLimit), policy: config.initiateRateLimit },
    perKey: { limiter: limiterFor(config.initiateKeyRateLimit), policy: config.initiateKeyRateLimit },
  });
  const endpointLimits = new EndpointOperationLimits({
    db,
    locks,
    recover: limiterFor(RECOVER_POLICY),
    test: limiterFor(TEST_POLICY),
    clock,
  });
  const linkTokens = new LinkTokenService({
    tokens: linkTokenStore,
    apps,
    connections: connections.lifecycle,
    brands: activeCatalog,
    clock,
  });
  const authz = new AuthorizationService(tuples, caches.cache('authz-granted', { max: 100_000, ttlMs: minute }));
  const stopSweeps = startSweeps(
    // The sweeps scan whole collections on FerretDB: with the deadline of long operations.
    { idempotency: new MongoIdempotencyStore(longDb, locks), linkTokens, observations: repositories.observations },
    clock,
    logger,
  );
  // The ZIP table loads now (about 0.1 s), not on a first near= search.
  zipCentroid('00000');
  const catalogService = new CatalogService(activeCatalog, storage, endpointHealth, zipCentroid);
  // Events committed here wake the dispatchers: this replica's at once, the others' over Redis.
  const signals = new WorkSignals(redis);
  // The dispatcher works in the background and scans and purges whole collections: its stores have the
  // deadline of long operations. Requests use the others.
  const dispatcherStores = {
    outbox: new Outbox(longDb, locks, clock),
    events: new MongoEventQueue(longDb, locks, clock),
    recovery: new OutboxRecovery(longDb, locks),
    deliveries: new DeliveryStore(longDb, locks),
  };
  // What the dispatcher hands back (a lease given up) or recovery commits wakes the dispatchers as committed events do.
  for (const store of [outbox, dispatcherStores.outbox, dispatcherStores.events, dispatcherStores.recovery]) {
    store.onCommit((ids, events) => signals.announce({ events: ids }, events));
  }
  const dispatcher = new Dispatcher({
    ...dispatcherStores,
    endpoints,
    signals,
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
  const readiness = readinessOf(db, redis, activeCatalog);
  return {
    readiness,
    registry,
    dispatcher,
    deliveries,
    signals,
    ...repositories,
    caches,
    snapshots,
    storage,
    activeCatalog,
    endpointHealth,
    catalogService,
    catalogAnswers: new CatalogAnswers(catalogService, config.publicBaseUrl, config.trustProxy),
    close: () =>
      shutDown(
        {
          stopSweeps,
          dispatcher,
          sync: connections.syncRunner,
          vault: connections.vault,
          catalog: activeCatalog,
          endpointHealth,
          observations: repositories.observations,
          caches,
        },
        config.shutdownTimeoutMs,
      ),
    outbox,
    authz,
    idempotencyStore,
    admin: new AdminService({
      accounts,
      keys,
      apps,
      authz,
      generations,
      cursors: ADMIN_CURSORS,
      clock,
      syncs: connections.syncStore,
    }),
    patientService: new PatientService({ patients, authz, accounts, outbox, clock }),
    webhookEndpointService: new WebhookEndpointService({
      endpoints,
      accounts,
      cursors: new CursorCodec(config.cursorSecret),
      urlPolicy: { allowPrivate: config.webhookAllowPrivateUrls, resolve },
      deliveries,
      clock,
    }),
    users,
    ingest,
    connections,
    gateway: new GatewayService({
      users: appUsers,
      apps,
      observations,
      generations,
      indexes: new ConnectionIndexes(observations, config.gatewayIndexMb * 1024 * 1024, undefined, (error, id) =>
        logger.warn({ err: error, connectionId: id }, 'observations: a checkpoint could not be written; next tidy'),
      ),
      cursors: new CursorCodec(config.cursorSecret),
      clock,
      logger,
    }),
    linkTokens,
    connectSessions: new ConnectSessionService({
      sessions,
      users,
      connections: connections.lifecycle,
      limits: initiateLimits,
      links: linkTokens,
      apps,
      brands: activeCatalog,
      signIns: connections.launches,
      clock,
    }),
    webhookDeliveryService: new WebhookDeliveryService({
      endpoints,
      deliveries,
      outbox,
      // recover reads dispatched events on the requests' handle, with their deadline
      events: new MongoEventQueue(db, locks, clock),
      signals,
      cursors: new CursorCodec(config.cursorSecret),
      clock,
      limits: endpointLimits,
    }),
  };
}
