// List-then-watch of BrandCatalogs with the safety nets a long-lived watch needs: a watch that ends is
// resumed from the last resourceVersion, one that expired (410 Gone) is replaced by a fresh list, one that
// goes silent past the watchdog is restarted, and a periodic relist catches anything missed (deletions
// included, by comparing with the cache).
import type { Logger } from 'pino';
import { keyOf, statusOf, type BrandCatalogObject, type KubeClient } from './kube.js';

export interface InformerHandlers {
  onChange(catalog: BrandCatalogObject): void;
  onDelete(catalog: BrandCatalogObject): void;
}

export interface InformerOptions {
  relistMs: number;
  /** Restart the watch when nothing (not even a bookmark) arrived for this long. */
  watchdogMs: number;
}

export class CatalogInformer {
  private readonly cache = new Map<string, BrandCatalogObject>();
  private resourceVersion = '';
  private abort: AbortController | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private relistTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private generation = 0;
  private failedWatches = 0;
  /** Counts, for tests and metrics. */
  readonly stats = { lists: 0, watches: 0, expired: 0, watchdogRestarts: 0 };

  constructor(
    private readonly kube: KubeClient,
    private readonly handlers: InformerHandlers,
    private readonly options: InformerOptions,
    private readonly logger: Logger,
  ) {}

  get(key: string): BrandCatalogObject | undefined {
    return this.cache.get(key);
  }

  /** Starts listing and watching; a failed first list (CRD or RBAC not there yet) is retried, not fatal. */
  async start(): Promise<void> {
    await this.relist().catch((error: unknown) => this.retry(error));
    this.relistTimer = setInterval(() => void this.relist().catch((error: unknown) => this.logger.warn({ err: error }, 'informer: relist failed')), this.options.relistMs);
    this.relistTimer.unref();
  }

  /** Restarts the watch from a given position (tests use an ancient one to provoke 410 Gone). */
  async resumeFrom(resourceVersion: string): Promise<void> {
    this.resourceVersion = resourceVersion;
    await this.watch();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.relistTimer);
    clearTimeout(this.watchdog);
    this.abort?.abort();
  }

  /** Lists everything, reconciles the cache with it, and (re)starts the watch from the list's version. */
  private async relist(): Promise<void> {
    if (this.stopped) return;
    const { items, resourceVersion } = await this.kube.listCatalogs();
    this.stats.lists++;
    const seen = new Set<string>();
    for (const item of items) {
      seen.add(keyOf(item));
      this.cache.set(keyOf(item), item);
      this.handlers.onChange(item);
    }
    for (const [key, cached] of this.cache) {
      if (!seen.has(key)) {
        this.cache.delete(key);
        this.handlers.onDelete(cached);
      }
    }
    this.resourceVersion = resourceVersion;
    await this.watch();
  }

  private async watch(): Promise<void> {
    if (this.stopped) return;
    const generation = ++this.generation; // events of a replaced watch are ignored
    this.abort?.abort();
    this.stats.watches++;
    this.armWatchdog(generation);
    this.abort = await this.kube.watchCatalogs(
      this.resourceVersion,
      (type, object) => {
        if (generation !== this.generation) return;
        this.armWatchdog(generation);
        if (type === 'ERROR') {
          if ((object as { code?: number }).code === 410) {
            this.stats.expired++;
            this.generation++; // the ending stream must not restart a watch from the expired position
            this.logger.info('informer: watch expired (410 Gone); relisting');
            void this.relist().catch((error: unknown) => this.retry(error));
          }
          return;
        }
        this.failedWatches = 0;
        const catalog = object as BrandCatalogObject;
        if (catalog.metadata?.resourceVersion) this.resourceVersion = catalog.metadata.resourceVersion;
        if (type === 'BOOKMARK') return;
        if (type === 'DELETED') {
          this.cache.delete(keyOf(catalog));
          this.handlers.onDelete(catalog);
        } else {
          this.cache.set(keyOf(catalog), catalog);
          this.handlers.onChange(catalog);
        }
      },
      (error) => {
        if (generation !== this.generation || this.stopped) return;
        const status = statusOf(error) ?? (error as { statusCode?: number } | null)?.statusCode;
        if (status === 410 || /too old|Gone/i.test(String(error ?? ''))) {
          this.stats.expired++;
          void this.relist().catch((e: unknown) => this.retry(e));
          return;
        }
        // Ended streams are normal (server timeouts); errors back off so a 403 or 5xx is not hammered.
        const delay = error ? Math.min(30_000, 200 * 2 ** this.failedWatches++) : 200;
        if (error) this.logger.warn({ err: error, retryInMs: delay }, 'informer: watch failed; restarting it');
        setTimeout(() => void this.watch().catch((e: unknown) => this.retry(e)), delay).unref();
      },
    );
  }

  private armWatchdog(generation: number): void {
    clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => {
      if (generation !== this.generation || this.stopped) return;
      this.stats.watchdogRestarts++;
      this.logger.warn({ silentMs: this.options.watchdogMs }, 'informer: watch silent too long; restarting it');
      void this.watch().catch((error: unknown) => this.retry(error));
    }, this.options.watchdogMs);
    this.watchdog.unref();
  }

  private retry(error: unknown): void {
    this.logger.warn({ err: error }, 'informer: list or watch failed; retrying');
    if (!this.stopped) setTimeout(() => void this.relist().catch((e: unknown) => this.retry(e)), 1000).unref();
  }
}
