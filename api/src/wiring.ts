// The composition root (docs/architecture.md, "Wiring"): each feature builds itself from the infrastructure and the
// features built before it, in this order, from the connections main.ts (or a test) opened. Features never open
// connections of their own. What the parts return is gathered into Services, which the HTTP handler (app.ts), the
// entry points and the tests use.
import type { Redis } from 'ioredis';
import type { Db } from 'mongodb';
import type dns from 'node:dns';
import { pino, type Logger } from 'pino';
import type { Clock } from '#core/clock.js';
import type { Config } from './config.js';
import { createAccessLog } from './features/access-log/index.js';
import { createAccounts } from './features/accounts/create.js';
import { createAdmin } from './features/admin/create.js';
import { createAppUserDocuments, createAppUsers } from './features/app-users/index.js';
import { createApps } from './features/apps/create.js';
import { createAuthz } from './features/authz/create.js';
import { createCatalog } from './features/catalog/create.js';
import { createClinical } from './features/clinical/create.js';
import { NO_READ_LOG } from './features/clinical/index.js';
import { createConnectSessions, createSessionStore } from './features/connect-sessions/index.js';
import { createConnections } from './features/connections/index.js';
import { createCredentials } from './features/credentials/create.js';
import { createEvents } from './features/events/index.js';
import { createPatients } from './features/patients/create.js';
import { createPortal } from './features/portal/index.js';
import { createWebhooks } from './features/webhooks/create.js';
import { systemResolver, type Resolver } from './features/webhooks/url-policy.js';
import { readinessOf } from './readiness.js';
import { MongoIdempotencyStore } from './shared/http/idempotency-store.js';
import { openInfrastructure } from './shared/infra/infrastructure.js';
import { shutDown } from './shutdown.js';
import { startSweeps } from './sweeps.js';

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
  /** Benchmarks only: the gateway records no reads (bench/server.ts measures the access log's cost this way). */
  withoutAccessLog?: boolean;
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
  withoutAccessLog = false,
}: Connections) {
  const infrastructure = await openInfrastructure({ config, db, longDb, redis, clock, logger });
  // Idempotency records live beside the data they protect (docs/api.md, "Rules every operation follows"), with or
  // without Redis.
  const idempotencyStore = new MongoIdempotencyStore(db, infrastructure.locks);
  await idempotencyStore.init(longDb);

  // Each line's features are independent of one another: their stores' indexes are built side by side.
  const [accounts, credentials, apps, authz, events, catalog, sessions] = await Promise.all([
    createAccounts(infrastructure),
    createCredentials(infrastructure),
    createApps(infrastructure),
    createAuthz(infrastructure),
    createEvents(infrastructure),
    createCatalog(infrastructure),
    createSessionStore(infrastructure),
  ]);
  const [userDocuments, patients, webhooks] = await Promise.all([
    createAppUserDocuments(infrastructure, { outbox: events.outbox }),
    createPatients(infrastructure, { authz: authz.service, accounts: accounts.store, outbox: events.outbox }),
    createWebhooks(infrastructure, { accounts: accounts.store, events, resolve, lookup }),
  ]);
  const accessLog = await createAccessLog(infrastructure, { apps: apps.store, brands: catalog.active });
  const clinical = await createClinical(infrastructure, {
    users: userDocuments.store,
    apps: apps.store,
    readLog: withoutAccessLog ? NO_READ_LOG : accessLog.writer,
  });
  const connections = await createConnections(infrastructure, {
    users: userDocuments,
    apps: apps.store,
    accounts: accounts.store,
    sessions,
    ingest: clinical.ingest,
    attachments: clinical.attachments,
    outbox: events.outbox,
    brands: catalog.active,
  });
  const users = createAppUsers(userDocuments, connections.lifecycle);
  const connectSessions = await createConnectSessions(infrastructure, {
    sessions,
    users,
    connections: connections.lifecycle,
    signIns: connections.launches,
    apps: apps.store,
    brands: catalog.active,
  });
  const portal = await createPortal(infrastructure, {
    users: userDocuments.store,
    apps: apps.store,
    brands: catalog.active,
    syncStates: connections.syncRequests,
    connections: connections.lifecycle,
    accessLog: accessLog.service,
  });
  const admin = createAdmin(infrastructure, {
    accounts: accounts.store,
    keys: credentials.store,
    apps: apps.store,
    authz: authz.service,
    syncs: connections.syncStore,
  });

  const stopSweeps = startSweeps(
    // The sweeps scan whole collections on FerretDB: with the deadline of long operations.
    {
      idempotency: new MongoIdempotencyStore(longDb, infrastructure.locks),
      linkTokens: connectSessions.linkTokens,
      observations: clinical.observations,
      accessLog: accessLog.retention,
      portalSessions: portal.sessions,
    },
    clock,
    logger,
  );
  const { caches, registry } = infrastructure;
  return {
    readiness: readinessOf(db, redis, catalog.active),
    registry,
    caches,
    idempotencyStore,
    close: () =>
      shutDown(
        {
          stopSweeps,
          dispatcher: webhooks.dispatcher,
          sync: connections.syncRunner,
          vault: connections.vault,
          catalog: catalog.active,
          endpointHealth: catalog.endpointHealth,
          observations: clinical.observations,
          accessLog: accessLog.writer,
          caches,
        },
        config.shutdownTimeoutMs,
      ),
    // Stores, for the entry points and the tests.
    accounts: accounts.store,
    keys: credentials.store,
    apps: apps.store,
    tuples: authz.tuples,
    patients: patients.store,
    endpoints: webhooks.endpoints,
    appUsers: userDocuments.store,
    sessions,
    linkTokenStore: connectSessions.linkTokenStore,
    observations: clinical.observations,
    deliveries: webhooks.deliveries,
    snapshots: catalog.snapshots,
    // Services.
    outbox: events.outbox,
    signals: events.signals,
    dispatcher: webhooks.dispatcher,
    storage: catalog.storage,
    activeCatalog: catalog.active,
    endpointHealth: catalog.endpointHealth,
    catalogService: catalog.service,
    catalogAnswers: catalog.answers,
    authz: authz.service,
    admin,
    patientService: patients.service,
    webhookEndpointService: webhooks.endpointService,
    webhookDeliveryService: webhooks.deliveryService,
    users,
    ingest: clinical.ingest,
    gateway: clinical.gateway,
    accessLog: accessLog.service,
    portal: portal.service,
    accessLogWriter: accessLog.writer,
    accessLogRetention: accessLog.retention,
    recordSearch: clinical.recordSearch,
    attachments: clinical.attachments,
    connections,
    linkTokens: connectSessions.linkTokens,
    connectSessions: connectSessions.service,
  };
}
