// What the gateway's index of a connection is built from and kept up to date with, without reading the
// connection's observations one document each: its checkpoint (checkpoints.ts), and what the bundles committed
// after a generation wrote, from their records, which are kept for KEPT_MS after they are applied (store.ts).
// Checkpoints are written here, after commits, before the records they stand for are forgotten (tidy), so a
// replica that starts finds every connection either checkpointed or young enough for its records to cover it.
import type { Collection } from 'mongodb';
import type { BundleHeads } from './bundle-heads.js';
import { KEPT_MS, type HeadDocument } from './head-document.js';
import { recordObservations, type BundleRecord } from './bundle-records.js';
import type { Checkpoint, CheckpointStore } from './checkpoints.js';
import { recordKey, type ObservationDocument } from './document.js';
import { lruCache } from '../../../shared/infra/lru.js';
import {
  documentRow,
  foldBundles,
  observationRow,
  withoutTombstones,
  withSearchValues,
  type CommittedBundle,
  type ObservationRow,
} from './rows.js';

/** A checkpoint is written once this many bundles were committed after it (each costs a record read to load). */
export const CHECKPOINT_EVERY = 32;

/** A row's text in a checkpoint beside its resource, at least (its fields as JSON). */
const ROW_TEXT_BYTES = 200;

/** What the bundles committed after a generation wrote, up to `gen`, the last committed one. */
export interface Changes {
  gen: number;
  bundles: CommittedBundle[];
}

export class RecordLog {
  /** Checkpoint writes under way here, by connection: one at a time per connection. */
  private readonly writing = new Map<string, Promise<void>>();
  /** The write that follows the one under way, by connection: callers meanwhile join it. */
  private readonly queued = new Map<string, Promise<void>>();
  /**
   * Connections whose whole read was given up here lately (a commit came during it): not read whole again for
   * KEPT_MS / 2, so a connection that takes bundles faster than it can be read is not read after every one.
   */
  private readonly gaveUp = lruCache<string, true>(10_000, { ttl: KEPT_MS / 2 });

  constructor(
    private readonly heads: BundleHeads,
    private readonly records: Collection<BundleRecord>,
    readonly checkpoints: CheckpointStore,
    /** The whole connection from its documents: for a connection no checkpoint and no records cover. */
    private readonly all: (connectionId: string) => AsyncIterable<ObservationDocument>,
    /** A checkpoint's largest text: a larger connection is marked too large to keep (the gateway's index budget). */
    private readonly maxBytes: number,
  ) {}

  /**
   * What the bundles committed after generation `after` wrote, in commit order (pending ones too: their records are
   * whole), up to the last commit; null when one of them is no longer recorded (forgotten: read a checkpoint).
   */
  async changes(connectionId: string, after: number): Promise<Changes | null> {
    const visibility = await this.heads.visibility(connectionId);
    const listed = new Set([...visibility.pending, ...visibility.kept].map((g) => g.gen));
    const abandoned = new Set(visibility.abandoned);
    const gens: number[] = [];
    // Generations are handed out one after another: each is committed (listed until forgotten) or abandoned.
    for (let gen = after + 1; gen <= visibility.committed; gen++) {
      if (listed.has(gen)) gens.push(gen);
      else if (!abandoned.has(gen)) return null;
    }
    const bundles: CommittedBundle[] = [];
    for (const gen of gens) {
      const record = await this.records.findOne({ _id: `${connectionId}/${gen}` });
      if (!record) return null; // forgotten since the head was read
      const at = record.at.getTime();
      bundles.push({
        gen,
        at,
        rows: recordObservations(record).map((fields) =>
          observationRow({ ...fields, _id: recordKey(connectionId, fields.resourceType, fields.resourceId) }, at),
        ),
      });
    }
    return { gen: visibility.committed, bundles };
  }

  checkpoint(connectionId: string): Promise<Checkpoint | null> {
    return this.checkpoints.load(connectionId);
  }

  /**
   * Whether the connection's checkpoint should be brought up to its head: CHECKPOINT_EVERY bundles behind, a bundle
   * after it applied half of KEPT_MS ago (its record is forgotten at KEPT_MS), or records no longer covering it.
   */
  async due(head: HeadDocument, now: number): Promise<boolean> {
    if (this.maxBytes === 0) return false; // the gateway indexes nothing: no checkpoints
    const manifest = await this.checkpoints.manifest(head._id);
    if (manifest?.oversized && manifest.bytes > this.maxBytes) return false;
    const from = manifest?.gen ?? 0;
    if (head._version <= from) return false;
    if (head._version - from >= CHECKPOINT_EVERY) return true;
    const listed = new Set([...(head.pending ?? []), ...head.kept, ...head.abandoned].map((g) => g.gen));
    for (let gen = from + 1; gen <= head._version; gen++) if (!listed.has(gen)) return true;
    return head.kept.some((k) => k.gen > from && k.at.getTime() <= now - KEPT_MS / 2);
  }

  /**
   * Brings the connection's checkpoint up to its last commit. One write runs at a time per connection: a call while
   * one is under way (it may stop short of a later commit) is answered by the next, which every such call shares.
   */
  write(connectionId: string): Promise<void> {
    const queued = this.queued.get(connectionId);
    if (queued) return queued;
    const running = this.writing.get(connectionId);
    if (!running) return this.start(connectionId);
    const next = running
      .catch(() => {}) // that caller was told
      .then(() => {
        this.queued.delete(connectionId);
        return this.start(connectionId);
      });
    this.queued.set(connectionId, next);
    return next;
  }

  private start(connectionId: string): Promise<void> {
    const write = this.writeNow(connectionId).finally(() => this.writing.delete(connectionId));
    this.writing.set(connectionId, write);
    return write;
  }

  private async writeNow(connectionId: string): Promise<void> {
    if (this.maxBytes === 0) return;
    // Already at the last commit (checked before the parts are read).
    const manifest = await this.checkpoints.manifest(connectionId);
    if (manifest && !manifest.oversized && manifest.gen >= (await this.heads.visibility(connectionId)).committed)
      return;
    const current = await this.checkpoints.load(connectionId);
    // Marked too large for this budget: it stays so (ingests add to a connection). For a larger budget (it was
    // raised) it is read again.
    if (current && 'oversized' in current && current.bytes > this.maxBytes) return;
    const base = current && 'rows' in current ? current : { gen: 0, rows: [] };
    const changes = await this.changes(connectionId, base.gen);
    const next = changes ? this.folded(base.rows, changes) : await this.whole(connectionId);
    if (next && (next.gen > base.gen || (current !== null && 'oversized' in current)))
      await this.checkpoints.save(connectionId, next.gen, next.content, this.maxBytes);
  }

  private folded(base: ObservationRow[], changes: Changes): { gen: number; content: { rows: ObservationRow[] } } {
    const rows = foldBundles(base, changes.bundles);
    return { gen: changes.gen, content: { rows: [...rows.values()].map(withSearchValues) } };
  }

  /**
   * The connection read whole from its documents, when no commit came during the read and none was being applied
   * (then it is exactly the state of the last commit); undefined otherwise (the next tidy tries again). The read
   * stops once the rows pass the budget: then only that the connection is too large is kept.
   */
  private async whole(
    connectionId: string,
  ): Promise<{ gen: number; content: { rows: ObservationRow[] } | { oversized: number } } | undefined> {
    if (this.gaveUp.has(connectionId)) return undefined;
    const before = await this.heads.visibility(connectionId);
    if (before.pending.length > 0) return undefined;
    const rows = new Map<string, ObservationRow>();
    let bytes = 0;
    for await (const doc of this.all(connectionId)) {
      const row = documentRow(doc);
      bytes += row.resource.length + ROW_TEXT_BYTES;
      if (bytes > this.maxBytes) return { gen: before.committed, content: { oversized: bytes } };
      rows.set(doc._id, { ...row, firstIngestedAt: rows.get(doc._id)?.firstIngestedAt ?? row.firstIngestedAt });
    }
    withoutTombstones(rows);
    const after = await this.heads.visibility(connectionId);
    if (after.committed !== before.committed || after.pending.length > 0) {
      this.gaveUp.set(connectionId, true);
      return undefined;
    }
    return { gen: before.committed, content: { rows: [...rows.values()].map(withSearchValues) } };
  }
}
