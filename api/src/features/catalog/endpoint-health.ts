// The endpoint health an API replica shows beside the catalog it serves (ActiveCatalog): the operator's latest
// publication for that catalog (core/src/catalog/endpoint-health.ts), followed without a new snapshot, by
// Redis announcements when configured and by polling always. A publication is loaded whole and swapped in with
// one assignment, so a request sees one publication throughout; a failed load keeps the previous one.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { HEALTH_CHANNEL, parseHealthPublication } from '#core/catalog/announce.js';
import type { EndpointHealthStore } from '#core/catalog/endpoint-health.js';
import type { EndpointHealth } from '#core/catalog/model.js';
import { catalogKey, type CatalogRef } from '#core/catalog/snapshots.js';
import { Follower } from './follow.js';

/** The version while nothing is published: a constant, so ETags built from it stay stable. */
export const NO_HEALTH_VERSION = '0';

interface Loaded {
  version: string;
  health: Map<string, EndpointHealth>;
}

const NOTHING: Loaded = { version: NO_HEALTH_VERSION, health: new Map() };

export class ActiveEndpointHealth {
  private current: Loaded = NOTHING;
  private readonly follower = new Follower(() => this.load());

  constructor(
    private readonly store: EndpointHealthStore,
    readonly ref: CatalogRef,
    private readonly logger: Logger,
  ) {}

  /** The last published outcome for a brand; undefined when it has none (never checked: UNKNOWN). */
  get(brandId: string): EndpointHealth | undefined {
    return this.current.health.get(brandId);
  }

  /** Names the publication `get` answers from (for ETags); NO_HEALTH_VERSION while there is none. */
  get version(): string {
    return this.current.version;
  }

  /** Brings the outcomes up to the latest publication. Concurrent calls share one run (plus one rerun). */
  refresh(): Promise<void> {
    return this.follower.refresh();
  }

  private async load(): Promise<void> {
    const started = Date.now();
    const published = await this.store.load(this.ref, this.current === NOTHING ? undefined : this.current.version);
    if (published === 'unchanged') return;
    if (published === null) {
      this.current = NOTHING; // the catalog was deleted, or its checks never ran
      return;
    }
    this.current = { version: published.version, health: published.health };
    this.logger.debug(
      { catalog: catalogKey(this.ref), version: published.version, brands: published.brands, ms: Date.now() - started },
      'endpoint health loaded',
    );
  }

  /** Loads now, then follows publications: Redis announcements when given, and polling every `pollMs`. */
  async start(pollMs: number, redis?: Redis): Promise<void> {
    const onError = (error: unknown) =>
      this.logger.warn(
        { err: error, catalog: catalogKey(this.ref) },
        'endpoint health refresh failed; showing the previous outcomes',
      );
    // Health is an addition to the catalog, never a reason not to serve: a failed first load is logged.
    await this.refresh().catch(onError);
    await this.follower.follow({
      pollMs,
      ...(redis && { redis }),
      channel: HEALTH_CHANNEL,
      concerns: (message) => {
        const announced = parseHealthPublication(message);
        return announced?.catalog === catalogKey(this.ref) && announced.version !== this.current.version;
      },
      onError,
    });
  }

  stop(): Promise<void> {
    return this.follower.stop();
  }
}
