// The indexes a replica keeps of connections (connection-index.ts), in a byte-bounded LRU shared by all
// connections, each stamped with the connection's `obs:<id>` generation token read before it was loaded
// (shared/infra/generations.ts): every ingest replaces the token, so no search on any replica uses an index that
// misses the last ingest.
//
// An index is loaded from the connection's checkpoint and the records of the bundles committed after it (a few
// documents: store.ts, changes() and checkpoint()), and brought up to date after an ingest with the records of the
// bundles committed since (advance()), never read again whole; only a connection that neither covers (its data older
// than checkpoints) is read from its documents, once, and then checkpointed. A connection larger than a quarter of
// the budget is not indexed: the gateway then searches the database.
import type { Logger } from 'pino';
import pLimit from 'p-limit';
import { LRUCache } from 'lru-cache';
import { foldBundles } from '../records/rows.js';
import type { RecordStore } from '../records/store.js';
import { ConnectionIndex } from './connection-index.js';

/** What an index is loaded from (RecordStore, and its fake in unit tests). */
export type IndexSource = Pick<RecordStore, 'all' | 'changes' | 'checkpoint' | 'writeCheckpoint'>;

/** The per-replica indexes of connections: loaded on demand, at most two at a time, never used once stale. */
export class ConnectionIndexes {
  private readonly indexes: LRUCache<string, ConnectionIndex | Oversized>;
  /** Loads in flight by connection; a search joins one only if it began under the token it read. */
  private readonly building = new Map<string, { token: string; index: Promise<ConnectionIndex | null> }>();
  /** At most two loads at a time (p-limit); the rest wait in order. */
  private readonly builds = pLimit(2);
  private readonly maxBytesPerConnection: number;

  /** `maxBytes` 0: no indexes (every search reads the database). */
  constructor(
    private readonly source: IndexSource,
    private readonly maxBytes: number,
    ttlMs = 10 * 60_000,
    /** Where a checkpoint written after a whole read that failed is logged (the next tidy writes it). */
    private readonly logger?: Pick<Logger, 'warn'>,
  ) {
    this.maxBytesPerConnection = Math.floor(maxBytes / 4);
    // Bounded by bytes alone (a `max` would allocate for every entry it allows up front: lru.ts).
    this.indexes = new LRUCache({
      maxSize: Math.max(1, maxBytes),
      sizeCalculation: (value) => (value instanceof ConnectionIndex ? Math.max(1, value.bytes) : 64),
      ttl: ttlMs,
    });
  }

  /**
   * An index of the connection loaded under `token` (its `obs:` generation token, read just before), or null
   * when indexing is off or the connection is too large for it (remembered for the TTL: ingests only add to
   * a connection).
   */
  async get(connectionId: string, token: string): Promise<ConnectionIndex | null> {
    if (this.maxBytes === 0) return null;
    const cached = this.indexes.get(connectionId);
    if (cached && !(cached instanceof ConnectionIndex)) return null;
    if (cached && cached.token === token) return cached;
    const flying = this.building.get(connectionId);
    if (flying && flying.token === token) return flying.index;
    const index = this.build(connectionId, token, cached);
    this.building.set(connectionId, { token, index });
    try {
      return await index;
    } finally {
      if (this.building.get(connectionId)?.index === index) this.building.delete(connectionId);
    }
  }

  private build(connectionId: string, token: string, stale?: ConnectionIndex): Promise<ConnectionIndex | null> {
    return this.builds(async () => {
      const index = await this.load(connectionId, token, stale);
      // The newest build wins: one that began under an older token finishes later only if it was slower.
      if (this.building.get(connectionId)?.token === token || !this.indexes.has(connectionId))
        this.indexes.set(connectionId, index ?? OVERSIZED);
      return index;
    });
  }

  /**
   * The stale index with the bundles committed since it was loaded; else the checkpoint with the bundles committed
   * after it; else (neither is there: data older than checkpoints) the whole connection from its documents, which
   * is then checkpointed so that no replica reads it whole again.
   */
  private async load(connectionId: string, token: string, stale?: ConnectionIndex): Promise<ConnectionIndex | null> {
    const max = this.maxBytesPerConnection;
    if (stale?.gen !== undefined) {
      const changes = await this.source.changes(connectionId, stale.gen);
      if (changes) return stale.advance(changes, token, max);
    }
    const checkpoint = await this.source.checkpoint(connectionId);
    if (checkpoint && 'oversized' in checkpoint && checkpoint.bytes > max) return null;
    // (Marked too large under a smaller budget than this one: read again, below.)
    const base = checkpoint && 'rows' in checkpoint ? checkpoint : { gen: 0, rows: [] };
    const changes = await this.source.changes(connectionId, base.gen);
    if (changes) {
      const rows = foldBundles(base.rows, changes.bundles);
      return ConnectionIndex.fromRows(rows.values(), max, token, changes.gen);
    }
    const index = await ConnectionIndex.build(this.source.all(connectionId), max, token);
    this.source
      .writeCheckpoint(connectionId)
      .catch((error: unknown) =>
        this.logger?.warn({ err: error, connectionId }, 'observations: a checkpoint could not be written; next tidy'),
      );
    return index;
  }
}

/** Marks a connection too large to index. */
interface Oversized {
  oversized: true;
}
const OVERSIZED: Oversized = Object.freeze({ oversized: true });
