// Writing one bundle of observations (store.ts) all or nothing (docs/operations.md, "Clinical ingest"), under a
// generation of its own that its connection's head commits in one write (bundle-heads.ts), by the one writer the
// head's lease admits:
//   1. its record, the whole bundle as it will be stored, goes into observation_bundles (`<connection>/<gen>`);
//   2. its new resources are inserted, marked with the generation (`seq`): readers skip a document first written
//      by a generation not yet committed, or by one that never will be;
//   3. the commit: from here readers see the bundle whole. Resources it replaces are laid over what readers
//      read from its record while they are applied in place, after the answer (bundle-applier.ts).
// Before step 1, what a generation that never committed left behind is deleted, once no writer of it can be at work.
// Every step writes inserts, or changes one document by _id alone: the embedded database (FerretDB on SQLite)
// reads the whole collection for any other filter, even _id with one more condition (200 such updates took
// 30 s beside 3,000 documents, against 0.5 s by _id alone), so a bundle costs about the same whatever it replaces.
import type { Collection } from 'mongodb';
import type { Clock } from '#core/clock.js';
import { isDuplicateKey } from '#core/infra/mongo.js';
import type { BundleHeads } from './bundle-heads.js';
import {
  insertRecord,
  interrupted,
  lostLease,
  packObservations,
  recordObservations,
  unsetRemoved,
  type BundleRecord,
  type StoredFields,
} from './bundle-records.js';
import { recordKey, type ObservationDocument } from './document.js';
import { KEPT_MS, type WriterLease } from './head-document.js';

/** Point reads at once when an abandoned generation's leftovers are looked for. */
const READS_AT_ONCE = 16;

export class BundleWriter {
  constructor(
    private readonly heads: BundleHeads,
    private readonly records: Collection<BundleRecord>,
    /** The observations, with the deadline of long operations (store.ts). */
    private readonly longCollection: Collection<ObservationDocument>,
    private readonly clock: Clock,
  ) {}

  /**
   * Writes and commits the bundle (`given`: the records' fields, storedFields(), not none) under the connection's
   * writer lease: its generation, how many records it replaced (of them, how many were tombstones brought back), their
   * new fields (for the applier), and what it wrote. Nothing is committed when it fails (nor when `select` leaves
   * nothing: its generation is then given up, as a writer that stopped gives one up).
   */
  async write(
    connectionId: string,
    given: StoredFields[],
    at: Date,
    /**
     * Decides what is written once no other bundle can commit (under the lease, before anything is written): a full
     * sync's removal keeps only what is still stale then. Nothing left: nothing is written (null).
     */
    select?: (stored: StoredFields[], renew: () => Promise<void>) => Promise<StoredFields[]>,
  ): Promise<{
    gen: number;
    replaced: number;
    replacing: StoredFields[];
    revived: number;
    written: StoredFields[];
  } | null> {
    const lease = await this.heads.acquire(connectionId, () => this.clock.now());
    const { gen } = lease;
    const idOf = (fields: StoredFields) => recordKey(connectionId, fields.resourceType, fields.resourceId);
    let committed = false;
    try {
      await this.removeLeftovers(lease);
      await this.renewed(lease);
      const stored = select ? await select(given, () => this.renewed(lease)) : given;
      if (stored.length === 0) return null;
      await this.renewed(lease);
      await insertRecord(this.records, {
        _id: `${connectionId}/${gen}`,
        connectionId,
        gen,
        at,
        observations: packObservations(stored),
      });
      await this.renewed(lease);
      // Most of a bundle is usually new: one unordered insert of everything; the ids that exist fail it, and a
      // unique _id decides, so two ingests racing on one id never duplicate it.
      const existing = await this.insertNew(
        stored.map((fields) => ({ _id: idOf(fields), ...fields, seq: gen, rev: gen, firstIngestedAt: at })),
      );
      // Leftovers of a generation that never committed are not there for readers: this bundle writes them anew.
      // (Read by _id, then written by _id alone: see the top of this file. No other writer is at work on them.)
      if (existing.size > 0 && lease.abandoned.length > 0) {
        const leftovers = new Set(await this.marked(lease, [...existing], lease.abandoned));
        const again = stored.filter((fields) => leftovers.has(idOf(fields)));
        if (again.length > 0) {
          await this.renewed(lease);
          // seq only moves forward: a write of this bundle that lands late, after another took its lease over and
          // wrote the same leftover, does not hide what that one committed.
          await this.longCollection.bulkWrite(
            again.map((fields) => ({
              updateMany: {
                filter: { _id: idOf(fields) },
                update: {
                  $set: { ...fields, rev: gen, firstIngestedAt: at },
                  $max: { seq: gen },
                  ...unsetRemoved(fields),
                },
              },
            })),
            { ordered: false },
          );
        }
        for (const id of leftovers) existing.delete(id);
      }
      const replaced = existing.size;
      // Of those, the records a full sync removed and this bundle brings back count as new (read only where a record
      // of the connection was ever removed).
      // (Not for a removal's own bundle. A tombstone still being applied is not seen: its record then counts as
      // replaced.)
      const removes = stored.some((fields) => fields.removed);
      const revived =
        replaced > 0 && lease.removals && !removes
          ? (await this.marked(lease, [...existing], [], { removed: true })).length
          : 0;
      committed = await this.heads.commit(lease, replaced > 0, at, removes);
      if (!committed) throw lostLease();
      const replacing = stored.filter((fields) => existing.has(idOf(fields)));
      return { gen, replaced, replacing, revived, written: stored };
    } catch (error) {
      // A duplicate _id that escapes is a write that landed twice around an interruption, not the client's
      // conflict: nothing is committed, and the bundle can be sent again.
      throw isDuplicateKey(error) ? interrupted() : error;
    } finally {
      if (!committed) await this.heads.release(lease).catch(() => this.heads.releaseWhenAnswering(lease));
    }
  }

  /** Inserts the documents that are new; the _ids of those that exist. */
  private async insertNew(docs: ObservationDocument[]): Promise<Set<string>> {
    try {
      await this.longCollection.insertMany(docs, { ordered: false });
      return new Set();
    } catch (error) {
      const failures = (error as { writeErrors?: { code: number; index: number }[] | { code: number; index: number } })
        .writeErrors;
      const list = failures === undefined ? [] : Array.isArray(failures) ? failures : [failures];
      // Anything but duplicates (or duplicates without saying which) is an interrupted write: retry the bundle.
      if (list.length === 0 || list.some((e) => !isDuplicateKey(e)))
        throw isDuplicateKey(error) ? interrupted() : error;
      return new Set(list.map((e) => docs[e.index]!._id));
    }
  }

  private async renewed(lease: WriterLease): Promise<void> {
    if (!(await this.heads.renew(lease, this.clock.now()))) throw lostLease();
  }

  /**
   * Deletes what a generation that never committed wrote, once no writer of it can still be at work: the new
   * observations its record lists that still carry its mark (a later bundle may have written them anew). Under
   * the writer's lease, so no bundle writes them meanwhile.
   */
  private async removeLeftovers(lease: WriterLease): Promise<void> {
    const { connectionId } = lease;
    const head = await this.heads.head(connectionId);
    const old = this.clock.now().getTime() - KEPT_MS;
    const expired = (head?.abandoned ?? []).filter((a) => !a.cleaned && a.at.getTime() <= old).map((a) => a.gen);
    if (expired.length === 0) return;
    for (const gen of expired) {
      const record = await this.records.findOne({ _id: `${connectionId}/${gen}` });
      if (!record) continue; // it died before its record, so before anything else
      const marked = await this.marked(
        lease,
        recordObservations(record).map((fields) => recordKey(connectionId, fields.resourceType, fields.resourceId)),
        [gen],
      );
      await this.renewed(lease);
      if (marked.length > 0)
        await this.longCollection.bulkWrite(
          marked.map((_id) => ({ deleteMany: { filter: { _id } } })),
          { ordered: false },
        );
      await this.records.deleteOne({ _id: record._id });
    }
    await this.heads.cleaned(connectionId, expired);
  }

  /**
   * Which of the documents `ids` were first written by one of `gens` (or, with `removed`, are tombstones): read by
   * _id, a few at once.
   */
  private async marked(lease: WriterLease, ids: string[], gens: number[], { removed = false } = {}): Promise<string[]> {
    const marked: string[] = [];
    for (let from = 0; from < ids.length; from += READS_AT_ONCE) {
      if (from % (READS_AT_ONCE * 16) === 0) await this.renewed(lease);
      const docs = await Promise.all(
        ids
          .slice(from, from + READS_AT_ONCE)
          .map((_id) => this.longCollection.findOne({ _id }, { projection: { seq: 1, removed: 1 } })),
      );
      for (const doc of docs)
        if (doc && (removed ? doc.removed === true : doc.seq !== undefined && gens.includes(doc.seq)))
          marked.push(doc._id);
    }
    return marked;
  }
}
