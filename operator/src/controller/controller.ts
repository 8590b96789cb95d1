// The controller: watch bindings (the informer) feed a work queue of namespace/name keys; workers run the
// idempotent reconcile() for each, requeue after refreshInterval, and back off per key on failure.
import type { Logger } from 'pino';
import { CatalogInformer, type InformerOptions } from './informer.js';
import { keyOf, type BrandCatalogObject } from './kube.js';
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

  async start(): Promise<void> {
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
    await this.informer.start();
  }

  async stop(): Promise<void> {
    this.informer?.stop();
    this.queue?.shutDown();
    await Promise.all(this.workers);
    this.queue = undefined;
    this.informer = undefined;
  }

  private async work(queue: WorkQueue): Promise<void> {
    for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
      const catalog = this.informer?.get(key);
      try {
        if (catalog) {
          this.reconciles++;
          const requeue = await reconcile(catalog, this.deps);
          queue.forget(key);
          if (requeue !== undefined) queue.addAfter(key, requeue);
        }
      } catch (error) {
        const delay = queue.addRateLimited(key);
        this.logger.warn({ err: error, catalog: key, retryInMs: delay }, 'reconcile failed');
      } finally {
        queue.done(key);
      }
    }
  }
}
