// The durable outbox's writers (docs/architecture.md, "Outbox"). Without multi-document transactions an event is
// written in two steps around the change that causes it: staged before, committed after. The change writes the
// staged events' change id into the document it changes (VersionedCollection), so a crash in between leaves a
// staged event that the dispatcher's recovery (outbox-recovery.ts) later commits or drops by what that document
// holds: no event is lost and none is invented. Committed events wait in the dispatcher's queue (event-queue.ts)
// until it has handed them to every endpoint.
import { randomUUID } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import type { Clock } from '#core/clock.js';
import type { DocumentLocks } from '#core/infra/locks.js';
import { deleteOneWhere } from '#core/infra/where.js';
import { markPlainWrite } from '../../shared/infra/change-scope.js';
import type { ChangeTarget, DeliverableType, DomainEvent } from './domain-event.js';
import {
  changeVerdict,
  commitStaged,
  CommitListeners,
  OUTBOX_EVENTS,
  STAGE_MS,
  toDocument,
  type CommitAnnouncer,
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
  record<T>(
    events: DomainEvent[],
    target: ChangeTarget,
    change: (changeId: string) => Promise<T | undefined>,
  ): Promise<T | undefined>;
  /** Events that need no change of their own (the delivery system's), committed at once. */
  append(events: DomainEvent[]): Promise<void>;
}

export interface OutboxOptions {
  /** How long a change may take before recovery first looks at its staged events. */
  stageMs?: number;
  /** Told of the events this outbox commits. */
  announcer?: CommitAnnouncer;
}

/** When a commit after a change that happened failed: the delays of the next tries before recovery's. */
const COMMIT_RETRIES_MS = [1_000, 5_000];

export class Outbox implements EventOutbox {
  private readonly collection: Collection<OutboxDocument>;
  private readonly listeners: CommitListeners;
  private readonly stageMs: number;

  constructor(
    private readonly db: Db,
    private readonly locks: DocumentLocks,
    private readonly clock: Clock,
    options: OutboxOptions = {},
  ) {
    this.collection = db.collection<OutboxDocument>(OUTBOX_EVENTS);
    this.stageMs = options.stageMs ?? STAGE_MS;
    this.listeners = new CommitListeners(options.announcer);
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

  async record<T>(
    events: DomainEvent[],
    target: ChangeTarget,
    change: (changeId: string) => Promise<T | undefined>,
  ): Promise<T | undefined> {
    const changeId = randomUUID();
    const createdAt = this.clock.now();
    const stagedUntil = new Date(createdAt.getTime() + this.stageMs);
    if (events.length > 0)
      await this.collection.insertMany(
        events.map((e) => ({ ...toDocument(e, 'staged', createdAt), changeId, target, stagedUntil })),
      );
    // A throw leaves the events staged: the change may have happened all the same, and recovery will know.
    const result = await change(changeId);
    if (result === undefined) {
      // "Nothing to do" is the change's reading of its write's answer, and an answer can mislead (a retried
      // write that meets its own first attempt): the events go only if the target does not hold the change.
      if ((await changeVerdict(this.db, target, changeId)) === 'happened') await this.commit(events);
      else
        for (const event of events) await deleteOneWhere(this.collection, this.locks, event.id, { status: 'staged' });
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
    this.listeners.notify(
      events.map((e) => e.id),
      events,
    );
  }

  private async commit(events: DomainEvent[]): Promise<void> {
    const committedAt = this.clock.now();
    for (const event of events) {
      const committed = await commitStaged(this.collection, this.locks, event.id, committedAt);
      // Recovery (outbox-recovery.ts) gave up on a change slower than abandonMs and dropped the event; it did happen.
      if (!committed && !(await this.collection.findOne({ _id: event.id })))
        await this.collection.insertOne(toDocument(event, 'pending', committedAt));
    }
    this.listeners.notify(
      events.map((e) => e.id),
      events,
    );
  }
}
