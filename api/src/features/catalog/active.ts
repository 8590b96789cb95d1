// The catalog an API replica serves: the active snapshot, indexed in memory. A newly activated snapshot is
// loaded and indexed beside the old one, then swapped in with one reference assignment, so every request
// sees either the old catalog or the new one, never a mix, and none fails during the swap. Activation is
// announced over Redis when configured; polling MongoDB is the backstop (and the only path without Redis).
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { CatalogBrand, PlatformType } from '#core/catalog/model.js';
import { CATALOG_CHANNEL, parseActivation } from '#core/catalog/announce.js';
import { catalogKey, type CatalogRef, type SnapshotStore } from '#core/catalog/snapshots.js';
import { Follower } from './follow.js';
import type { BrandSearchOptions } from './search/index.js';
import type { SearchResult } from './search/results.js';
import type { BrowsePosition } from './search/browse-cursor.js';

export interface CatalogIndex {
  search(q: string, options: BrandSearchOptions): SearchResult;
  browse(platform: PlatformType, limit: number, after?: BrowsePosition, only?: Uint8Array): SearchResult;
  get(id: string): CatalogBrand | undefined;
  mask(keep: (brand: CatalogBrand) => boolean): Uint8Array;
  readonly size: number;
}

export type IndexBuilder = (brands: CatalogBrand[]) => CatalogIndex;

export interface ServedCatalog {
  snapshotId: string;
  index: CatalogIndex;
  loadedAt: Date;
}

export class ActiveCatalog {
  private current: ServedCatalog | null = null;
  private pointerSeen = false;
  private readonly follower = new Follower(() => this.load());

  constructor(
    private readonly store: SnapshotStore,
    readonly ref: CatalogRef,
    private readonly build: IndexBuilder,
    private readonly logger: Logger,
  ) {}

  /** The catalog to answer this request with (capture it once per request). */
  get(): ServedCatalog | null {
    return this.current;
  }

  /** The served catalog's brand; undefined when it lists none of that id (or no catalog is loaded yet). */
  brand(id: string): CatalogBrand | undefined {
    return this.current?.index.get(id);
  }

  /** Ready when the active snapshot, if there is one, is loaded. */
  get ready(): boolean {
    return this.current !== null || !this.pointerSeen;
  }

  /** Brings the served catalog up to the active pointer. Concurrent calls share one run (plus one rerun). */
  refresh(): Promise<void> {
    return this.follower.refresh();
  }

  private async load(): Promise<void> {
    const pointer = await this.store.active(this.ref);
    if (!pointer) {
      this.pointerSeen = false;
      return;
    }
    this.pointerSeen = true;
    if (pointer.snapshotId === this.current?.snapshotId) return;
    const started = Date.now();
    const snapshot = await this.store.load(pointer.snapshotId);
    if (!snapshot) return; // pruned between the two reads: the next refresh sees the newer pointer
    const index = this.build(snapshot.brands);
    this.current = { snapshotId: snapshot.id, index, loadedAt: new Date() };
    this.logger.info(
      { catalog: catalogKey(this.ref), snapshotId: snapshot.id, brands: index.size, ms: Date.now() - started },
      'catalog snapshot activated',
    );
  }

  /** Loads now, then follows activations: Redis announcements when given, and polling every `pollMs`. */
  async start(pollMs: number, redis?: Redis): Promise<void> {
    await this.refresh();
    await this.follower.follow({
      pollMs,
      ...(redis && { redis }),
      channel: CATALOG_CHANNEL,
      concerns: (message) => parseActivation(message)?.catalog === catalogKey(this.ref),
      onError: (error) =>
        this.logger.warn(
          { err: error, catalog: catalogKey(this.ref) },
          'catalog refresh failed; serving the previous snapshot',
        ),
    });
  }

  stop(): Promise<void> {
    return this.follower.stop();
  }
}
