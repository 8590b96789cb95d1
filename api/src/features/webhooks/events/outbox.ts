// The durable outbox. Without multi-document transactions an event is written in two steps around the
// change that causes it: staged before, committed after. The change writes the staged events' change id
// into the document it changes (VersionedCollection), so a crash in between leaves a staged event that the
// dispatcher later commits or drops by what that document holds: no event is lost and none is invented.
// Committed events wait here until the dispatcher has handed them to every endpoint (then `dispatched`).
//
// A staged event is dropped only when its change is known not to have happened, and never can: the target
// document moved past the version the change would have written, with another change's id in its place
// (the change was conditional on the version before, which is gone). A change that threw, or that reported
// "nothing to do" (a retried insert that meets its own first attempt as a duplicate), is ambiguous: the
// write may have landed, or may still land (a stalled database applies what it had already read when it
// resumes). Its events stay staged and the document is asked again, less and less often, until it records
// the change (committed) or rules it out (dropped); after a day without an answer they are abandoned.
import { randomUUID } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import type { Clock } from '../../../../../core/src/clock.js';
import type { DocumentLocks } from '../../../../../core/src/infra/locks.js';
import { deleteOneWhere, updateOneWhere } from '../../../../../core/src/infra/where.js';
import { changeRecorded, markPlainWrite } from '../../../shared/infra/change-scope.js';
import type { ChangeTarget, DeliverableType, DomainEvent } from './domain-event.js';
import {
  CommitListeners,
  OUTBOX_EVENTS,
  toDocument,
  type CommitListener,
  type OutboxDocument,
} from './outbox-collection.js';

/** What services need to emit events with their changes; Outbox (MongoDB) and FakeOutbox (tests). */
export interface EventOutbox {
  event(type: DeliverableType, customerAccountId: string, subject: string, data: Record<string, unknown>): DomainEvent;
  /**
   * Runs `change(changeId)` with its events recorded durably: staged first, committed once the change
   * succeeded, dropped if it decided there was nothing to do (returned undefined) and `target` does not
   * record it. The change must write `changeId` into `target` (VersionedCollection does, given it). If the
   * change throws, the events stay staged and recovery commits or drops them by what `target` holds.
   */
  record<T>(events: DomainEvent[], target: ChangeTarget, change: (changeId: string) => Promise<T | undefined>): Promise<T | undefined>;
  /** Events that need no change of their own (the delivery system's), committed at once. */
  append(events: DomainEvent[]): Promise<void>;
}

export interface OutboxOptions {
  /** How long a change may take before recovery first looks at its staged events. */
  stageMs?: number;
  /** Recovery asks again at growing intervals (the event's age), at most this far apart. */
  maxRecheckMs?: number;
  /** A staged event whose change is still neither recorded nor ruled out after this long is abandoned. */
  abandonMs?: number;
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

/** When a commit after a change that happened failed: the delays of the next tries before recovery's. */
const COMMIT_RETRIES_MS = [1_000, 5_000];

/** Whether the change that would leave `target` at its version happened, cannot happen any more, or may still. */
type Verdict = 'happened' | 'ruled-out' | 'unknown';

export class Outbox implements EventOutbox {
  private readonly collection: Collection<OutboxDocument>;
  private readonly listeners = new CommitListeners();
  private readonly stageMs: number;
  private readonly maxRecheckMs: number;
  private readonly abandonMs: number;

  constructor(
    private readonly db: Db,
    private readonly locks: DocumentLocks,
    private readonly clock: Clock,
    options: OutboxOptions = {},
  ) {
    this.collection = db.collection<OutboxDocument>(OUTBOX_EVENTS);
    this.stageMs = options.stageMs ?? 60_000;
    this.maxRecheckMs = options.maxRecheckMs ?? 60 * 60_000;
    this.abandonMs = options.abandonMs ?? 24 * 60 * 60_000;
  }

  /**
   * Called with the ids of events as they are committed in this process (the dispatcher wakes on it), and the
   * events themselves when this process made them (so the dispatcher need not read them to know their type).
   */
  onCommit(listener: CommitListener): void {
    this.listeners.add(listener);
  }

  event(type: DeliverableType, customerAccountId: string, subject: string, data: Record<string, unknown>): DomainEvent {
    return { id: randomUUID(), type, customerAccountId, subject, data, occurredAt: this.clock.now() };
  }

  async record<T>(events: DomainEvent[], target: ChangeTarget, change: (changeId: string) => Promise<T | undefined>): Promise<T | undefined> {
    const changeId = randomUUID();
    const createdAt = this.clock.now();
    const stagedUntil = new Date(createdAt.getTime() + this.stageMs);
    await this.collection.insertMany(events.map((e) => ({ ...toDocument(e, 'staged', createdAt), changeId, target, stagedUntil })));
    // A throw leaves the events staged: the change may have happened all the same, and recovery will know.
    const result = await change(changeId);
    if (result === undefined) {
      // "Nothing to do" is the change's reading of its write's answer, and an answer can mislead (a retried
      // write that meets its own first attempt): the events go only if the target does not hold the change.
      if ((await this.verdict(target, changeId)) === 'happened') await this.commit(events);
      else for (const event of events) await deleteOneWhere(this.collection, this.locks, event.id, { status: 'staged' });
      return undefined;
    }
    // The change happened: its answer stands whatever becomes of the commit. A commit refused now (a
    // stalled lock or database) is tried again shortly, and recovery commits it in any case.
    await this.commit(events).catch(() => this.commitLater(events, COMMIT_RETRIES_MS));
    return result;
  }

  private commitLater(events: DomainEvent[], delays: readonly number[]): void {
    const [delay, ...rest] = delays;
    if (delay === undefined) return; // recovery's
    setTimeout(() => void this.commit(events).catch(() => this.commitLater(events, rest)), delay).unref();
  }

  async append(events: DomainEvent[]): Promise<void> {
    if (events.length === 0) return;
    // Inside an idempotent request (webhook test events) the first event is the request's recovery point.
    const mark = await markPlainWrite(OUTBOX_EVENTS, events[0]!.id);
    await this.collection.insertMany(events.map((e) => ({ ...toDocument(e, 'pending', this.clock.now()), ...mark })));
    this.listeners.notify(events.map((e) => e.id), events);
  }

  private async commit(events: DomainEvent[]): Promise<void> {
    const committedAt = this.clock.now();
    for (const event of events) {
      const committed = await updateOneWhere(this.collection, this.locks, event.id, { status: 'staged' }, { $set: { status: 'pending', createdAt: committedAt }, $unset: { stagedUntil: '' } });
      // Recovery abandoned a change that took longer than abandonMs and dropped the event; it did happen.
      if (!committed && !(await this.collection.findOne({ _id: event.id }))) await this.collection.insertOne(toDocument(event, 'pending', committedAt));
    }
    this.listeners.notify(events.map((e) => e.id), events);
  }

  /**
   * Settles staged events whose change had time to finish, by what the target document holds: committed
   * when it records the change, dropped when it rules the change out, asked again later when the change was
   * not written (yet), abandoned when that is still so after abandonMs.
   */
  async recoverStaged(now: Date, limit = 100): Promise<Recovery> {
    const stale = await this.collection.find({ status: 'staged', stagedUntil: { $lt: now } }).limit(limit).toArray();
    const outcome: Recovery = { committed: 0, dropped: 0, waiting: 0, abandoned: 0 };
    for (const doc of stale) {
      const verdict = doc.target && doc.changeId !== undefined ? await this.verdict(doc.target, doc.changeId) : 'ruled-out';
      if (verdict === 'happened') {
        if (await updateOneWhere(this.collection, this.locks, doc._id, { status: 'staged' }, { $set: { status: 'pending', createdAt: now }, $unset: { stagedUntil: '' } })) {
          outcome.committed++;
          this.listeners.notify([doc._id]);
        }
        continue;
      }
      const age = now.getTime() - doc.createdAt.getTime();
      if (verdict === 'unknown' && age < this.abandonMs) {
        // Asked again after as long again as it has waited so far: a day of waiting costs a few dozen reads.
        const next = new Date(now.getTime() + Math.min(Math.max(age, this.stageMs), this.maxRecheckMs));
        if (await updateOneWhere(this.collection, this.locks, doc._id, { status: 'staged' }, { $set: { stagedUntil: next } })) outcome.waiting++;
      } else if (await deleteOneWhere(this.collection, this.locks, doc._id, { status: 'staged' })) {
        outcome[verdict === 'unknown' ? 'abandoned' : 'dropped']++;
      }
    }
    return outcome;
  }

  /**
   * What the target says of the change `changeId`, which was to leave it at `target.version` and was
   * conditional on the version before (an insert: on there being no document).
   */
  private async verdict(target: ChangeTarget, changeId: string): Promise<Verdict> {
    const doc = await this.db.collection<{ _id: string; _version?: number; _changes?: Record<string, string> }>(target.collection).findOne({ _id: target.id });
    if (changeRecorded(doc, target.version, changeId)) return 'happened';
    // Not there yet, or not yet at the version: the change may still land. Past it, another change holds
    // the version this one needed, so this one can no longer apply. (A document that moved CHANGE_RING
    // versions further has forgotten which change made that version; the change is taken as not made.)
    return doc === null || (doc._version ?? 0) < target.version ? 'unknown' : 'ruled-out';
  }
}
