// The durable outbox. Without multi-document transactions an event is written in two steps around the
// change that causes it: staged before, committed after. A crash in between leaves a staged event that the
// dispatcher confirms (or discards) against the resource it names, so no event is lost and none invented.
import { randomUUID } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import type { Clock } from '../../../core/src/clock.js';

export const EVENT_TYPES = [
  'patient.created',
  'patient.deleted',
  'app_user.limited',
  'app_user.activated',
  'app_user.tombstoned',
  'connection.created',
  'connection.revoked',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export interface DomainEvent {
  id: string;
  type: EventType;
  customerAccountId: string;
  /** The resource the event is about, e.g. "patient:<id>". */
  subject: string;
  data: Record<string, unknown>;
  occurredAt: Date;
}

interface OutboxDocument extends Omit<DomainEvent, 'id'> {
  _id: string;
  status: 'staged' | 'pending';
  createdAt: Date;
}

/** What services need to emit events with their changes; Outbox (MongoDB) and FakeOutbox (tests). */
export interface EventOutbox {
  event(type: EventType, customerAccountId: string, subject: string, data: Record<string, unknown>): DomainEvent;
  /**
   * Runs `change` with its events recorded durably: staged first, committed once the change succeeded,
   * dropped if it failed or decided there was nothing to do (returned undefined).
   */
  record<T>(events: DomainEvent[], change: () => Promise<T | undefined>): Promise<T | undefined>;
}

export class Outbox implements EventOutbox {
  private readonly collection: Collection<OutboxDocument>;

  constructor(
    db: Db,
    private readonly clock: Clock,
  ) {
    this.collection = db.collection<OutboxDocument>('outbox_events');
  }

  async init(): Promise<void> {
    await this.collection.createIndex({ status: 1, createdAt: 1 });
    await this.collection.createIndex({ customerAccountId: 1, createdAt: 1 });
  }

  event(type: EventType, customerAccountId: string, subject: string, data: Record<string, unknown>): DomainEvent {
    return { id: randomUUID(), type, customerAccountId, subject, data, occurredAt: this.clock.now() };
  }

  /**
   * Runs `change` with its events recorded durably: staged first, committed once the change succeeded,
   * dropped if it failed or decided there was nothing to do (returned undefined).
   */
  async record<T>(events: DomainEvent[], change: () => Promise<T | undefined>): Promise<T | undefined> {
    const createdAt = this.clock.now();
    const ids = events.map((e) => e.id);
    await this.collection.insertMany(events.map(({ id, ...event }) => ({ _id: id, ...event, status: 'staged' as const, createdAt })));
    let result: T | undefined;
    try {
      result = await change();
    } catch (error) {
      await this.collection.deleteMany({ _id: { $in: ids } }).catch(() => {});
      throw error;
    }
    if (result === undefined) {
      await this.collection.deleteMany({ _id: { $in: ids } });
      return undefined;
    }
    await this.collection.updateMany({ _id: { $in: ids } }, { $set: { status: 'pending' } });
    return result;
  }

  /** For the dispatcher and tests: the events of an account in the order they were recorded. */
  async list(customerAccountId: string, status?: OutboxDocument['status']): Promise<(DomainEvent & { status: OutboxDocument['status'] })[]> {
    const docs = await this.collection
      .find({ customerAccountId, ...(status ? { status } : {}) })
      .sort({ createdAt: 1, _id: 1 })
      .toArray();
    return docs.map(({ _id, createdAt: _createdAt, ...rest }) => ({ id: _id, ...rest }));
  }
}
