// How a sync stores what it reads (docs/connecting.md, "Sync"): observations gathered into batches of at most 1,000
// and at most BATCH_BYTES of their JSON, one batch stored while the next fills. A running sync therefore holds at
// most two batches, the entry being read (ENTRY_BYTES) and the page's parts outside its entries (OTHER_BYTES): its
// 8 MiB budget, however large a page or its resources are, and the page is read while the database writes.
import type { NormalizedObservation } from '../../clinical/index.js';

/** What one running sync may hold of resources, all told. */
export const SYNC_BYTE_BUDGET = 8 * 1024 * 1024;
/** A resource larger than this is skipped as invalid. */
export const MAX_RESOURCE_BYTES = 1024 * 1024;
/** The most of one entry a page's reader collects (a resource, its fullUrl and search); a larger one is never held. */
export const ENTRY_BYTES = MAX_RESOURCE_BYTES + 64 * 1024;
/** The most of a page's parts outside its entries (link, meta, total) its reader keeps. */
export const OTHER_BYTES = 1024 * 1024;
/** Two of these (one stored, one filling), one entry being read and a page's other parts make the budget. */
export const BATCH_BYTES = Math.floor((SYNC_BYTE_BUDGET - ENTRY_BYTES - OTHER_BYTES) / 2);
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
  /** The batch being stored until it is (its observations are not stored before then). */
  private writing: Batch | null = null;
  private storing: Promise<void> | null = null;
  /** The largest batch cut so far, in bytes (tests). */
  largestBatchBytes = 0;

  constructor(private readonly deps: BatchWriterDeps) {}

  /**
   * The page the first observation not yet stored came from (the one being stored counts as not stored); null when
   * everything read is stored: where a run taken over must resume reading.
   */
  get pendingFrom(): string | null {
    return this.writing?.from ?? this.filling.from;
  }

  /** Adds an observation read from `page` (`bytes`: its JSON's size); waits when both batches are full. */
  async add(observation: NormalizedObservation, bytes: number, page: string): Promise<void> {
    // Cut before it would pass the byte limit, so no batch is ever larger than BATCH_BYTES.
    if (this.filling.observations.size > 0 && this.filling.bytes + bytes > BATCH_BYTES) await this.cut();
    const batch = this.filling;
    batch.from ??= page;
    // A resource read twice (a server that repeats one across pages) is stored once, as last read.
    batch.bytes += bytes;
    batch.observations.set(observation.resourceId, observation);
    if (batch.observations.size >= BATCH) await this.cut();
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

  /** The batch filling goes to the database once the one before it is stored; a new one starts filling. */
  private async cut(): Promise<void> {
    await this.storing;
    const batch = this.filling;
    this.filling = empty();
    this.largestBatchBytes = Math.max(this.largestBatchBytes, batch.bytes);
    this.writing = batch;
    const storing = this.write(batch);
    // Its failure is met where it is next awaited (the next cut, flush); until then it must not count as unhandled.
    storing.catch(() => {});
    this.storing = storing;
  }

  private async write(batch: Batch): Promise<void> {
    const counts = await this.deps.store([...batch.observations.values()]);
    this.writing = null;
    await this.deps.stored(counts, this.pendingFrom);
  }
}
