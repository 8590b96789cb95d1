// Applying committed bundles in place (store.ts; the step after a commit in bundle-writer.ts): the replacements of a
// committed bundle are written after the answer, by one applier at a time per connection in the order the bundles
// were committed (the head's applier lease). The head lists a bundle as pending until then; when its applier stopped
// (its server did), the next bundle of the connection, a search of the database, or the next build of a gateway
// index takes the lease over and applies it from the record. Replacements are written by _id alone (why:
// bundle-writer.ts).
import { randomUUID } from 'node:crypto';
import type { Collection } from 'mongodb';
import type { Clock } from '#core/clock.js';
import type { BundleHeads } from './bundle-heads.js';
import { movedOn, recordObservations, unsetRemoved, type BundleRecord, type StoredFields } from './bundle-records.js';
import { recordKey, type ObservationDocument } from './document.js';
import type { Visibility } from './head-document.js';

/** How long a search of the database waits for pending bundles to be applied before it answers 503. */
const WAIT_FOR_APPLY_MS = 4_000;
/** Replacements per write (the applier's lease is renewed before each). */
const APPLY_BATCH = 100;

export class BundleApplier {
  constructor(
    private readonly heads: BundleHeads,
    private readonly records: Collection<BundleRecord>,
    /** The observations, with the deadline of long operations (store.ts). */
    private readonly longCollection: Collection<ObservationDocument>,
    private readonly clock: Clock,
  ) {}

  /**
   * Applies the connection's pending bundles in place, in the order they were committed, under the head's
   * applier lease (returns at once when another process holds it: that one goes on to the end of the list).
   * `known`: replacements already known by generation (the writer's own); others come from their records.
   */
  async applyPending(connectionId: string, known = new Map<number, StoredFields[]>()): Promise<void> {
    const token = randomUUID();
    for (;;) {
      if (!(await this.heads.takeApplier(connectionId, token, this.clock.now()))) return;
      try {
        for (;;) {
          const next = (await this.heads.visibility(connectionId)).pending.reduce<number | undefined>(
            (first, p) => (first === undefined || p.gen < first ? p.gen : first),
            undefined,
          );
          if (next === undefined) break;
          const record = known.has(next) ? undefined : await this.records.findOne({ _id: `${connectionId}/${next}` });
          const replacing = known.get(next) ?? (record && recordObservations(record));
          if (!replacing) throw new Error(`the record of pending bundle ${connectionId}/${next} is missing`);
          for (let from = 0; from < replacing.length; from += APPLY_BATCH) {
            if (!(await this.heads.renewApplier(connectionId, token, this.clock.now()))) return;
            await this.replace(connectionId, next, replacing.slice(from, from + APPLY_BATCH));
          }
          await this.heads.applied(connectionId, next, this.clock.now());
        }
      } finally {
        await this.heads.releaseApplier(connectionId, token).catch(() => undefined);
      }
      // A bundle committed while the lease was given back may have found it held: look once more.
      if ((await this.heads.visibility(connectionId)).pending.length === 0) return;
    }
  }

  /**
   * One batch of a bundle's replacements (a test holds it to stop an applier part-way). updateMany, though an
   * _id matches at most one document: the embedded database (FerretDB 1.x on SQLite) keeps the SQLite connection
   * of a single-document update's lookup open until the whole command ends, so one command of more than ~100
   * updateOne statements on existing documents held its 100-connection pool and waited forever for one more,
   * locking the database for every request (docs/operations.md). An updateMany statement reads its lookup to the
   * end, which releases the connection at once. On MongoDB the two are the same write.
   */
  async replace(connectionId: string, gen: number, batch: StoredFields[]): Promise<void> {
    await this.longCollection.bulkWrite(
      batch.map((fields) => ({
        updateMany: {
          filter: { _id: recordKey(connectionId, fields.resourceType, fields.resourceId) },
          update: { $set: { ...fields, rev: gen }, ...unsetRemoved(fields) },
        },
      })),
      { ordered: false },
    );
  }

  /**
   * The connection's head once no bundle is pending: applies them when their applier stopped, else waits for it
   * up to WAIT_FOR_APPLY_MS (then 503).
   */
  async applied(connectionId: string): Promise<Visibility> {
    const waitUntil = performance.now() + WAIT_FOR_APPLY_MS;
    for (let pause = 20; ; pause = Math.min(pause * 2, 250)) {
      const visibility = await this.heads.visibility(connectionId);
      if (visibility.pending.length === 0) return visibility;
      await this.applyPending(connectionId);
      if (performance.now() + pause > waitUntil) throw movedOn();
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
