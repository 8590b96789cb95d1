// The controller: watch bindings (the informer) feed a work queue of namespace/name keys; workers run the
// idempotent reconcile() for each, requeue after refreshInterval, and back off per key on failure.
import type { Logger } from 'pino';
import { CatalogInformer, type InformerOptions } from './informer.js';
import { keyOf, type BrandCatalogObject } from '../shared/kube.js';
import { WorkQueue, type QueueOptions } from './queue.js';
import { reconcile, type ReconcileDeps } from './reconcile.js';

export interface ControllerOptions {
  informer: InformerOptions;
  queue: QueueOptions;
  workers: number;
}

export class CatalogController {
  private queue: WorkQueue | undefined;
  private informer: CatalogInformer | undefined;
  private workers: Promise<void>[] = [];
  /** Reconciles run by this instance, for tests and metrics. */
  reconciles = 0;

  constructor(
    private readonly deps: ReconcileDeps,
    private readonly options: ControllerOptions,
    private readonly logger: Logger,
  ) {}

  get running(): boolean {
    return this.queue !== undefined;
  }

  /** Catalogs waiting for a worker. */
  get queueDepth(): number {
    return this.queue?.depth ?? 0;
  }

  private stopping: Promise<void> | undefined;

  async start(): Promise<void> {
    await this.stopping; // a start right after a stop waits for it, instead of finding it half done
    if (this.queue) return;
    const queue = new WorkQueue(this.options.queue);
    this.queue = queue;
    // Only changes the reconciler acts on: the spec (generation), deletion, finalizers. Its own status
    // writes come back through the watch too and must not retrigger it, or a failing catalog would
    // bypass its backoff.
    const seen = new Map<string, string>();
    const signature = (catalog: BrandCatalogObject) =>
      `${catalog.metadata.generation}|${catalog.metadata.deletionTimestamp ?? ''}|${(catalog.metadata.finalizers ?? []).join(',')}`;
    this.informer = new CatalogInformer(
      this.deps.kube,
      {
        onChange: (catalog) => {
          const key = keyOf(catalog);
          if (seen.get(key) === signature(catalog)) return;
          seen.set(key, signature(catalog));
          queue.add(key);
        },
        onDelete: (catalog) => seen.delete(keyOf(catalog)),
      },
      this.options.informer,
      this.logger,
    );
    this.workers = Array.from({ length: this.options.workers }, () => this.work(queue));
    this.deps.health?.start();
    await this.informer.start();
  }

  /** Stops watching and waits for in-flight reconciles to finish. */
  stop(): Promise<void> {
    if (!this.queue) return this.stopping ?? Promise.resolve();
    const queue = this.queue;
    const informer = this.informer;
    this.queue = undefined;
    this.informer = undefined;
    informer?.stop();
    queue.shutDown();
    // The endpoint checks stop after the reconciles (which tell them what to do), publishing what they had.
    this.stopping = Promise.all(this.workers)
      .then(() => this.deps.health?.stop())
      .then(() => {
        this.stopping = undefined;
      });
    return this.stopping;
  }

  /** The informer of the run `queue` belongs to (none once that run is stopped). */
  private informerFor(queue: WorkQueue): CatalogInformer | undefined {
    return this.queue === queue ? this.informer : undefined;
  }

  private async work(queue: WorkQueue): Promise<void> {
    for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
      const catalog = this.informerFor(queue)?.get(key);
      try {
        if (catalog) {
          this.reconciles++;
          const timer = this.deps.metrics.reconcileSeconds.startTimer();
          const requeue = await reconcile(catalog, this.deps).finally(timer);
          this.deps.metrics.reconciles.inc({ result: 'succeeded' });
          queue.forget(key);
          if (requeue !== undefined) queue.addAfter(key, requeue);
        }
      } catch (error) {
        this.deps.metrics.reconciles.inc({ result: 'failed' });
        const delay = queue.addRateLimited(key);
        this.logger.warn({ err: error, catalog: key, retryInMs: delay }, 'reconcile failed');
      } finally {
        queue.done(key);
      }
    }
  }
}
