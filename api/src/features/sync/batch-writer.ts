// How a sync stores what it reads (docs/connecting.md, "Sync"): observations gathered into batches cut at 1,000 or
// at BATCH_BYTES of their JSON, whichever comes first, one batch stored while the next fills. So a running sync
// holds at most two batches and the resource being read: within its 8 MiB budget however large a page or its
// resources are (a resource over 1 MiB never gets this far), and the page is read while the database writes.
import type { NormalizedObservation } from '../clinical/index.js';

/** What one running sync may hold of resources: two batches and the one being read (MAX_RESOURCE_BYTES). */
export const SYNC_BYTE_BUDGET = 8 * 1024 * 1024;
export const MAX_RESOURCE_BYTES = 1024 * 1024;
export const BATCH_BYTES = (SYNC_BYTE_BUDGET - MAX_RESOURCE_BYTES) / 2;
/** Observations stored as one bundle at most (ingest's own limit). */
export const BATCH = 1000;

export interface BatchWriterDeps {
  /** Stores one batch (upserts by id). */
  store: (observations: NormalizedObservation[]) => Promise<{ ingested: number; updated: number }>;
  /** Told after each stored batch, with where the first observation not yet stored came from (its page). */
  stored: (counts: { ingested: number; updated: number }, pendingFrom: string | null) => Promise<void>;
}

interface Batch {
  observations: Map<string, NormalizedObservation>;
  bytes: number;
  /** The page its first observation came from. */
  from: string | null;
}

const empty = (): Batch => ({ observations: new Map(), bytes: 0, from: null });

export class BatchWriter {
  private filling = empty();
  private storing: Promise<void> | null = null;

  constructor(private readonly deps: BatchWriterDeps) {}

  /** The page the first observation not yet stored came from; null when everything read is stored. */
  get pendingFrom(): string | null {
    return this.filling.from;
  }

  /** Adds an observation read from `page` (`bytes`: its JSON's size); waits when both batches are full. */
  async add(observation: NormalizedObservation, bytes: number, page: string): Promise<void> {
    const batch = this.filling;
    batch.from ??= page;
    // A resource read twice (a server that repeats one across pages) is stored once, as last read.
    batch.bytes += bytes;
    batch.observations.set(observation.resourceId, observation);
    if (batch.observations.size >= BATCH || batch.bytes >= BATCH_BYTES) await this.cut();
  }

  /** Stores what is gathered and waits until everything is stored (a failure to store is thrown here). */
  async flush(): Promise<void> {
    if (this.filling.observations.size > 0) await this.cut();
    await this.storing;
  }

  /** Waits for the batch being stored, whatever its outcome (the run is ending anyway). */
  async settle(): Promise<void> {
    await this.storing?.catch(() => {});
  }

  /** The full batch goes to the database once the one before it is stored; a new one starts filling. */
  private async cut(): Promise<void> {
    await this.storing;
    const batch = this.filling;
    this.filling = empty();
    const storing = this.write(batch);
    // Its failure is met where it is next awaited (the next cut, flush); until then it must not count as unhandled.
    storing.catch(() => {});
    this.storing = storing;
  }

  private async write(batch: Batch): Promise<void> {
    const counts = await this.deps.store([...batch.observations.values()]);
    await this.deps.stored(counts, this.filling.from);
  }
}
