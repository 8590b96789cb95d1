// The catalog operator's process: config → Kubernetes, MongoDB, object storage, Redis → leader election →
// the controller (and the endpoint checks) while leading → graceful shutdown (the lease is released so a
// successor starts at once).
import { KubeConfig } from '@kubernetes/client-node';
import { systemClock, systemScheduler } from '#core/clock.js';
import { createLogger } from '#core/infra/logger.js';
import { loadOperatorConfig } from './config.js';
import { KubeClient } from './shared/kube.js';
import { healthAgent } from './health/agent.js';
import { HealthMonitor } from './health/monitor.js';
import { OperatorMetrics } from './shared/metrics.js';
import { startOperator } from './controller/operator.js';
import { serveOperatorEndpoints } from './http.js';
import { operatorReadiness } from './readiness.js';
import { closeSharedArtworkParser } from './pipeline/logos/parser.js';
import { fetchSourceList } from './pipeline/sources/fetch.js';
import { openPublishing } from './publishing.js';

async function main(): Promise<void> {
  const config = loadOperatorConfig();
  const logger = createLogger(config.logLevel, 'portico-operator');
  const kubeconfig = new KubeConfig();
  kubeconfig.loadFromDefault(); // KUBECONFIG, ~/.kube/config, or the in-cluster service account

  const publishing = await openPublishing(config, (m) => logger.info(m));
  const { close, healthStore, announceHealth, ...deps } = publishing;
  const metrics = new OperatorMetrics({ processMetrics: true });
  const kube = new KubeClient(kubeconfig);
  const health = new HealthMonitor({
    snapshots: deps.store,
    store: healthStore,
    kube,
    clock: systemClock,
    scheduler: systemScheduler,
    logger,
    metrics,
    agentFor: (settings) => healthAgent(settings),
    ...(announceHealth && { announce: announceHealth }),
  });
  const lease = {
    namespace: config.leaseNamespace,
    name: config.leaseName,
    identity: config.identity,
    leaseDurationSeconds: 15,
    retryMs: 2000,
    renewDeadlineMs: 10_000,
  };
  const operator = startOperator({
    kube,
    deps: { ...deps, clock: systemClock, logger, metrics, fetchText: fetchSourceList, health },
    controller: {
      informer: { relistMs: 5 * 60_000, watchdogMs: 5 * 60_000 },
      queue: { baseDelayMs: 1000, maxDelayMs: 5 * 60_000 },
      workers: 2,
    },
    lease,
    logger,
    onLostLeadership: (code) => process.exit(code),
  });
  metrics.watch({ queueDepth: () => operator.controller.queueDepth, leading: () => operator.elector.isLeader });
  // Connected: the API server answered one of the last few Lease reads (one every retryMs).
  const readiness = operatorReadiness(
    {
      lastContact: () => operator.elector.lastContact,
      leading: () => operator.elector.isLeader,
      pingDatabase: () => publishing.ping(),
    },
    lease.retryMs * 3 + lease.renewDeadlineMs,
  );
  const endpoints = await serveOperatorEndpoints(metrics, config.httpHost, config.httpPort, readiness);
  logger.info(
    { port: config.httpPort },
    `health, readiness and metrics on http://${config.httpHost}:${config.httpPort}`,
  );

  const shutdown = async (signal: string) => {
    logger.info({ signal }, 'shutting down');
    await operator.stop(); // in-flight reconciles finish before the lease goes to a successor
    endpoints.close();
    await closeSharedArtworkParser(); // the logo pipeline's worker threads
    await close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  console.error('portico-operator failed to start:', error);
  process.exit(1);
});
