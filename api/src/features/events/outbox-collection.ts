// The outbox_events collection, shared by the three parts of the outbox (docs/architecture.md, "Outbox"): the
// producer stages and commits events with their change (outbox.ts), the dispatcher claims and settles committed
// ones (event-queue.ts), and recovery settles what a writer that died left staged (outbox-recovery.ts). What a
// document holds, its states and its indexes are here, so each part reads and writes the same thing, and what two
// parts do alike: read a change's verdict from its target, commit a staged event, tell the listeners.
import type { Collection, Db, WithId } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import { updateOneWhere } from '#core/infra/where.js';
import { changeRecorded } from '../../shared/infra/change-scope.js';
import type { ChangeTarget, DomainEvent } from './domain-event.js';

export const OUTBOX_EVENTS = 'outbox_events';

/** How long a change may take, by default, before recovery first looks at its staged events. */
export const STAGE_MS = 60_000;

/** staged: written before its change; pending: committed, waiting for dispatch; dispatched: done. */
export type OutboxStatus = 'staged' | 'pending' | 'dispatched';

export interface StoredEvent extends DomainEvent {
  status: OutboxStatus;
  /** How many times a dispatcher has claimed it (more than one: a dispatcher stopped part-way). */
  claims: number;
}

export interface OutboxDocument extends Omit<DomainEvent, 'id'> {
  _id: string;
  status: OutboxStatus;
  createdAt: Date;
  claims: number;
  changeId?: string;
  target?: ChangeTarget;
  /** A staged event whose change has not been confirmed by then is settled by recovery. */
  stagedUntil?: Date;
  leaseOwner?: string | null;
  leaseUntil?: Date | null;
  dispatchedAt?: Date;
}

/** Whether the change that would leave `target` at its version happened, cannot happen any more, or may still. */
export type Verdict = 'happened' | 'ruled-out' | 'unknown';

/**
 * What the target says of the change `changeId`, which was to leave it at `target.version` and was
 * conditional on the version before (an insert: on there being no document). The writer asks when its change
 * reports "nothing to do", recovery when the writer never came back.
 */
export async function changeVerdict(db: Db, target: ChangeTarget, changeId: string): Promise<Verdict> {
  type Versioned = { _id: string; _version?: number; _changes?: Record<string, string> };
  const doc = await db.collection<Versioned>(target.collection).findOne({ _id: target.id });
  if (changeRecorded(doc, target.version, changeId)) return 'happened';
  // Not there yet, or not yet at the version: the change may still land. Past it, another change holds
  // the version this one needed, so this one can no longer apply. (A document that moved CHANGE_RING
  // versions further has forgotten which change made that version; the change is taken as not made.)
  return doc === null || (doc._version ?? 0) < target.version ? 'unknown' : 'ruled-out';
}

/** A staged event committed at `at`, unless it is no longer staged; the document if it was. */
export function commitStaged(
  collection: Collection<OutboxDocument>,
  locks: DocumentLocks,
  id: string,
  at: Date,
): Promise<WithId<OutboxDocument> | null> {
  const commit = { $set: { status: 'pending' as const, createdAt: at }, $unset: { stagedUntil: '' as const } };
  return updateOneWhere(collection, locks, id, { status: 'staged' }, commit);
}

/** Told of events as they become ready for dispatch in this process: committed, or handed back by a dispatcher. */
export type CommitListener = (ids: string[], events?: readonly DomainEvent[]) => void;

/** Who hears of events ready for dispatch: WorkSignals (signals.ts), which wakes this replica's dispatcher and others'. */
export interface CommitAnnouncer {
  announce(work: { events: string[] }, known?: readonly DomainEvent[]): void;
}

/** The listeners of one part of the outbox: its announcer (given when it is built, create.ts), and tests'. */
export class CommitListeners {
  private readonly listeners: CommitListener[] = [];

  constructor(announcer?: CommitAnnouncer) {
    if (announcer) this.listeners.push((ids, events) => announcer.announce({ events: ids }, events));
  }

  add(listener: CommitListener): void {
    this.listeners.push(listener);
  }

  notify(ids: string[], events?: readonly DomainEvent[]): void {
    for (const listener of this.listeners) listener(ids, events);
  }
}

/** `db`: the database handle index builds go through (they can take long). */
export async function createOutboxIndexes(db: Db): Promise<void> {
  const collection = db.collection<OutboxDocument>(OUTBOX_EVENTS);
  await collection.createIndex({ status: 1, createdAt: 1 });
  await collection.createIndex({ customerAccountId: 1, createdAt: 1 });
  await collection.createIndex({ customerAccountId: 1, occurredAt: 1, _id: 1 });
}

export function toDocument(event: DomainEvent, status: OutboxStatus, createdAt: Date): OutboxDocument {
  const { id, ...rest } = event;
  return { _id: id, ...rest, status, createdAt, claims: 0 };
}

export function toStored(doc: OutboxDocument): StoredEvent {
  return {
    id: doc._id,
    type: doc.type,
    customerAccountId: doc.customerAccountId,
    subject: doc.subject,
    data: doc.data,
    occurredAt: doc.occurredAt,
    ...(doc.targetEndpointId !== undefined && { targetEndpointId: doc.targetEndpointId }),
    status: doc.status,
    claims: doc.claims ?? 0,
  };
}
