// What the outbox holds for an account, read straight from its collection: tests check the events a request
// recorded (docs/architecture.md, "Outbox") without the API offering a way to list them.
import type { Db } from 'mongodb';
import {
  OUTBOX_EVENTS,
  toStored,
  type OutboxDocument,
  type OutboxStatus,
  type StoredEvent,
} from '../api/src/features/events/outbox-collection.js';

/** The account's events (those in `status` only, if given) in the order they were recorded. */
export async function eventsOf(db: Db, customerAccountId: string, status?: OutboxStatus): Promise<StoredEvent[]> {
  const docs = await db
    .collection<OutboxDocument>(OUTBOX_EVENTS)
    .find({ customerAccountId, ...(status ? { status } : {}) })
    .sort({ createdAt: 1, _id: 1 })
    .toArray();
  return docs.map(toStored);
}
