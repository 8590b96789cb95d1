// The catalog operator's process: config → Kubernetes, MongoDB, object storage, Redis → leader election →
// the controller while leading → graceful shutdown (the lease is released so a successor starts at once).
import { hostname } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { announceActivation } from '../../api/src/catalog/active.js';
import { SnapshotStore } from '../../api/src/catalog/snapshots.js';
import { systemClock } from '../../api/src/clock.js';
import { loadConfig } from '../../api/src/config.js';
import { documentLocksFor } from '../../api/src/infra/locks.js';
import { openConnections } from '../../api/src/infra/connections.js';
import { openObjectStorage } from '../../api/src/infra/object-storage/index.js';
import { CatalogController } from './controller/controller.js';
import { KubeClient } from './controller/kube.js';
import { LeaderElector } from './controller/leader.js';
import { fetchSourceText } from './pipeline/fetch-source.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const env = process.env;
  const logger = pino({ level: config.logLevel, base: { service: 'portico-operator' } });
  const kubeconfig = new KubeConfig();
  kubeconfig.loadFromDefault(); // KUBECONFIG, ~/.kube/config, or the in-cluster service account

  const connections = await openConnections(config, (m) => logger.info(m));
  const { mongo, redis } = connections;
  const store = new SnapshotStore(mongo.db, await documentLocksFor(mongo.db, redis), systemClock);
  await store.init();
  const kube = new KubeClient(kubeconfig);

  const controller = new CatalogController(
    {
      kube,
      store,
      storage: openObjectStorage(config.objectStorage),
      clock: systemClock,
      logger,
      fetchText: fetchSourceText,
      ...(redis && { announce: (ref, id) => announceActivation(redis, ref, id) }),
    },
    { informer: { relistMs: 5 * 60_000, watchdogMs: 5 * 60_000 }, queue: { baseDelayMs: 1000, maxDelayMs: 5 * 60_000 }, workers: 2 },
    logger,
  );
  const elector = new LeaderElector(
    kube,
    {
      namespace: env.POD_NAMESPACE ?? 'default',
      name: env.PORTICO_OPERATOR_LEASE ?? 'portico-catalog-operator',
      identity: env.POD_NAME ?? `${hostname()}-${process.pid}`,
      leaseDurationSeconds: 15,
      retryMs: 2000,
      renewDeadlineMs: 10_000,
    },
    logger,
    {
      onStartedLeading: () => void controller.start().catch((error: unknown) => logger.error({ err: error }, 'controller failed to start')),
      // Like controller-runtime: a leader that lost its lease exits (in-flight work included) and restarts
      // as a candidate, rather than risk working beside the new leader.
      onStoppedLeading: () => {
        if (shuttingDown) return;
        logger.error('lost leadership; exiting so that no work overlaps the new leader');
        process.exit(1);
      },
    },
  );
  elector.start();

  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    await controller.stop(); // in-flight reconciles finish before the lease goes to a successor
    await elector.stop();
    await connections.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  console.error('portico-operator failed to start:', error);
  process.exit(1);
});
