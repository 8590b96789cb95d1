// Recovery of staged events (docs/architecture.md, "Outbox"): a writer that died, or whose change threw, leaves
// its events staged in outbox_events, and the dispatcher's backstop pass settles them here by what the changed
// document holds, so no event is lost and none is invented.
//
// A staged event is dropped only when its change is known not to have happened, and never can: the target
// document moved past the version the change would have written, with another change's id in its place
// (the change was conditional on the version before, which is gone). A change that threw, or that reported
// "nothing to do" (a retried insert that meets its own first attempt as a duplicate), is ambiguous: the
// write may have landed, or may still land (a stalled database applies what it had already read when it
// resumes). Its events stay staged and the document is asked again, less and less often, until it records
// the change (committed) or rules it out (dropped); after a day without an answer they are abandoned.
import type { Collection, Db } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import { deleteOneWhere, updateOneWhere } from '#core/infra/where.js';
import {
  changeVerdict,
  commitStaged,
  CommitListeners,
  OUTBOX_EVENTS,
  STAGE_MS,
  type CommitAnnouncer,
  type CommitListener,
  type OutboxDocument,
} from './outbox-collection.js';

export interface RecoveryOptions {
  /** The writers' stageMs (outbox.ts): recovery never asks again sooner than this. */
  stageMs?: number;
  /** Recovery asks again at growing intervals (the event's age), at most this far apart. */
  maxRecheckMs?: number;
  /** A staged event whose change is still neither recorded nor ruled out after this long is abandoned. */
  abandonMs?: number;
  /** Told of the events recovery commits. */
  announcer?: CommitAnnouncer;
}

/** What one recovery pass did with the staged events it looked at. */
export interface Recovery {
  /** The target records the change: committed. */
  committed: number;
  /** The target rules the change out: dropped. */
  dropped: number;
  /** Not written (yet): the change may still land; asked again later. */
  waiting: number;
  /** Still unanswered after abandonMs: dropped. */
  abandoned: number;
}

export class OutboxRecovery {
  private readonly collection: Collection<OutboxDocument>;
  private readonly listeners: CommitListeners;
  private readonly stageMs: number;
  private readonly maxRecheckMs: number;
  private readonly abandonMs: number;

  constructor(
    private readonly db: Db,
    private readonly locks: DocumentLocks,
    options: RecoveryOptions = {},
  ) {
    this.collection = db.collection<OutboxDocument>(OUTBOX_EVENTS);
    this.stageMs = options.stageMs ?? STAGE_MS;
    this.maxRecheckMs = options.maxRecheckMs ?? 60 * 60_000;
    this.abandonMs = options.abandonMs ?? 24 * 60 * 60_000;
    this.listeners = new CommitListeners(options.announcer);
  }

  /** Called with the ids of events recovery commits, as Outbox.onCommit is with those a writer commits. */
  onCommit(listener: CommitListener): void {
    this.listeners.add(listener);
  }

  /**
   * Settles staged events whose change had time to finish, by what the target document holds: committed
   * when it records the change, dropped when it rules the change out, asked again later when the change was
   * not written (yet), abandoned when that is still so after abandonMs.
   */
  async recoverStaged(now: Date, limit = 100): Promise<Recovery> {
    const stale = await this.collection
      .find({ status: 'staged', stagedUntil: { $lt: now } })
      .limit(limit)
      .toArray();
    const outcome: Recovery = { committed: 0, dropped: 0, waiting: 0, abandoned: 0 };
    for (const doc of stale) {
      const verdict =
        doc.target && doc.changeId !== undefined ? await changeVerdict(this.db, doc.target, doc.changeId) : 'ruled-out';
      if (verdict === 'happened') {
        if (await commitStaged(this.collection, this.locks, doc._id, now)) {
          outcome.committed++;
          this.listeners.notify([doc._id]);
        }
        continue;
      }
      const age = now.getTime() - doc.createdAt.getTime();
      if (verdict === 'unknown' && age < this.abandonMs) {
        // Asked again after as long again as it has waited so far: a day of waiting costs a few dozen reads.
        const next = new Date(now.getTime() + Math.min(Math.max(age, this.stageMs), this.maxRecheckMs));
        const later = { $set: { stagedUntil: next } };
        if (await updateOneWhere(this.collection, this.locks, doc._id, { status: 'staged' }, later)) outcome.waiting++;
      } else if (await deleteOneWhere(this.collection, this.locks, doc._id, { status: 'staged' })) {
        outcome[verdict === 'unknown' ? 'abandoned' : 'dropped']++;
      }
    }
    return outcome;
  }
}
