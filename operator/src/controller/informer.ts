// List-then-watch of BrandCatalogs, going on after a watch ends as client-go's reflector does
// (tools/cache/reflector.go): a watch that closes is resumed from the last resourceVersion; one the server ends
// with 410 Gone (an ERROR event or the answer to its start) is replaced by a fresh list and a watch from the
// list's resourceVersion; 429 Too Many Requests (a busy server, a watch cache still starting) backs off and
// resumes; any other ERROR event or failed start backs off and relists, since only a list tells what the
// watch may have missed. A watch that goes silent past the watchdog is restarted, and a periodic relist
// catches anything missed (deletions included, by comparing with the cache).
import type { Logger } from 'pino';
import { keyOf, statusOf, type BrandCatalogObject, type KubeClient } from '../shared/kube.js';

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
    this.relistTimer = setInterval(
      () => void this.relist().catch((error: unknown) => this.logger.warn({ err: error }, 'informer: relist failed')),
      this.options.relistMs,
    );
    this.relistTimer.unref();
  }

  /** Restarts the watch from a given position (tests use an ancient one to provoke 410 Gone). */
  async resumeFrom(resourceVersion: string): Promise<void> {
    this.resourceVersion = resourceVersion;
    await this.watch();
  }

  stop(): void {
    this.stopped = true;
    this.generation++;
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
    let delivered = false;
    const end = (how: WatchEnd) => {
      if (generation !== this.generation || this.stopped) return;
      this.generation++; // the rest of an ending stream is not heard
      this.next(how, delivered);
    };
    const abort = await this.kube.watchCatalogs(
      this.resourceVersion,
      (type, object) => {
        if (generation !== this.generation) return;
        this.armWatchdog(generation);
        if (type === 'ERROR')
          return end({ status: (object as { code?: number } | undefined)?.code ?? 0, error: object });
        delivered = true;
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
      (error) => end({ status: statusOf(error) ?? (error as { statusCode?: number } | null)?.statusCode, error }),
    );
    // A watch that ended, was replaced or stopped while it started is not kept.
    if (generation === this.generation && !this.stopped) this.abort = abort;
    else abort.abort();
  }

  /** Goes on after a watch ended: relists or watches again, now or after a backoff (see afterWatch). */
  private next(how: WatchEnd, delivered: boolean): void {
    const { relist, backOff } = afterWatch(how, delivered);
    if (how.status === 410) this.stats.expired++;
    const delay = backOff ? Math.min(30_000, 200 * 2 ** this.failedWatches++) : 0;
    if (how.error || how.status !== undefined) {
      this.logger[how.status === 410 ? 'info' : 'warn'](
        { err: how.error, status: how.status, retryInMs: delay },
        `informer: watch ended; ${relist ? 'relisting' : 'watching again'}`,
      );
    }
    const go = () => void (relist ? this.relist() : this.watch()).catch((error: unknown) => this.retry(error));
    if (delay === 0) go();
    else setTimeout(go, delay).unref();
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

/** How a watch ended: the HTTP status of its ERROR event or of the answer to its start, and what was said. */
interface WatchEnd {
  /** Absent when the stream closed or the connection failed; 0 for an ERROR event without a code. */
  status?: number;
  error?: unknown;
}

/**
 * What client-go's reflector does next. 410: the position is gone, relist at once. 429: the position is
 * fine but the server is busy, back off and resume from it. Any other status: back off and relist (a watch
 * has no other way to learn what it missed). A closed stream or a broken connection: resume, backing off
 * if nothing at all came through (a server or proxy closing every watch at once must not be hammered).
 */
function afterWatch({ status, error }: WatchEnd, delivered: boolean): { relist: boolean; backOff: boolean } {
  if (status === 410) return { relist: true, backOff: false };
  if (status === 429) return { relist: false, backOff: true };
  if (status !== undefined) return { relist: true, backOff: true };
  return { relist: false, backOff: Boolean(error) || !delivered };
}
