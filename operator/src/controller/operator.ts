// One operator instance: a candidate for the Lease that runs the controller while it leads. Like
// controller-runtime, an instance that loses its lease stops for good (in production the process exits and
// Kubernetes restarts it as a fresh candidate) rather than risk working beside the new leader.
import type { Logger } from 'pino';
import { CatalogController, type ControllerOptions } from './controller.js';
import type { KubeClient } from '../shared/kube.js';
import { LeaderElector, type LeaderOptions } from './leader.js';
import type { ReconcileDeps } from './reconcile.js';

export interface OperatorInstance {
  readonly controller: CatalogController;
  readonly elector: LeaderElector;
  /** Finishes in-flight reconciles, then gives the lease up so a successor starts at once. */
  stop(): Promise<void>;
}

export interface OperatorOptions {
  kube: KubeClient;
  deps: Omit<ReconcileDeps, 'kube'>;
  controller: ControllerOptions;
  lease: LeaderOptions;
  logger: Logger;
  /** Called once leadership is lost; production exits the process with this code. */
  onLostLeadership: (exitCode: number) => void;
}

export function startOperator(options: OperatorOptions): OperatorInstance {
  const { kube, logger } = options;
  const controller = new CatalogController({ ...options.deps, kube }, options.controller, logger);
  let stopping = false;
  const elector = new LeaderElector(kube, options.lease, logger, {
    onStartedLeading: () =>
      void controller.start().catch((error: unknown) => logger.error({ err: error }, 'controller failed to start')),
    onStoppedLeading: () => {
      if (stopping) return;
      logger.error('lost leadership; stopping so that no work overlaps the new leader');
      options.onLostLeadership(1);
    },
  });
  elector.start();
  return {
    controller,
    elector,
    async stop() {
      stopping = true;
      await controller.stop();
      await elector.stop();
    },
  };
}
