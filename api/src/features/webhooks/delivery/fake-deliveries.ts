// In-memory DeliveryStore for unit tests of the webhook services; test/api/features/webhooks/delivery/deliveries.test.ts
// holds it and DeliveryRepository to the same behaviour (docs/architecture.md, "Stores and fakes"): the attempt log
// newest first by id, an event queued at most once per endpoint with its PENDING record, a cancelled delivery's
// record saying why it was not made. `log` (the recorder's, on the repository) is here to give a test's endpoint a
// history of attempts made.
import { DuplicateKeyError } from '../../../shared/infra/memory-versioned.js';
import {
  pendingRecord,
  type AttemptPage,
  type AttemptRecord,
  type AttemptStatus,
  type DeliveryStore,
  type QueuedDelivery,
} from './deliveries.js';

export class FakeDeliveryStore implements DeliveryStore {
  /** The attempt log, by attempt id. */
  private readonly attempts = new Map<string, AttemptRecord>();
  /** The retry queue, by delivery id. */
  private readonly queue = new Map<string, QueuedDelivery>();

  /** Records attempts made; an id already logged is refused (after the others are written, as an unordered insert). */
  async log(records: AttemptRecord[]): Promise<void> {
    let refused: string | undefined;
    for (const record of records)
      if (this.attempts.has(record.id)) refused ??= record.id;
      else this.settle(record);
    if (refused !== undefined) throw new DuplicateKeyError(refused);
  }

  async list(
    accountId: string,
    endpointId: string,
    options: { limit: number; status?: AttemptStatus; before?: string },
  ): Promise<AttemptPage> {
    const { limit, status, before } = options;
    const matching = [...this.attempts.values()]
      .filter(
        (r) =>
          r.accountId === accountId &&
          r.endpointId === endpointId &&
          (status === undefined || r.status === status) &&
          (before === undefined || r.id < before),
      )
      .sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    return { items: matching.slice(0, limit).map((r) => structuredClone(r)), hasMore: matching.length > limit };
  }

  async history(
    endpointId: string,
    eventIds: string[],
  ): Promise<Map<string, { attempts: number; succeeded: boolean }>> {
    const history = new Map<string, { attempts: number; succeeded: boolean }>();
    for (const record of this.attempts.values()) {
      // Attempts made only: a PENDING record, or a cancelled one, was never attempted.
      if (record.endpointId !== endpointId || !eventIds.includes(record.eventId) || record.attemptedAt == null)
        continue;
      const entry = history.get(record.eventId) ?? { attempts: 0, succeeded: false };
      entry.attempts++;
      entry.succeeded ||= record.status === 'SUCCEEDED';
      history.set(record.eventId, entry);
    }
    return history;
  }

  async enqueue(deliveries: QueuedDelivery[]): Promise<QueuedDelivery[]> {
    const queued: QueuedDelivery[] = [];
    for (const delivery of deliveries) {
      if (this.queue.has(delivery.id)) continue; // as the unique _id refuses it
      this.queue.set(delivery.id, structuredClone(delivery));
      this.settle(pendingRecord(delivery));
      queued.push(structuredClone(delivery));
    }
    return queued;
  }

  async cancel(accountId: string, endpointId: string, reason: string): Promise<number> {
    let cancelled = 0;
    for (const [id, delivery] of this.queue) {
      if (delivery.accountId !== accountId || delivery.endpointId !== endpointId) continue;
      this.queue.delete(id);
      cancelled++;
      this.settle({ ...pendingRecord(delivery), status: 'FAILED', error: `not attempted: ${reason}` });
    }
    return cancelled;
  }

  /** Writes a record whole, over one of the same id (the repository's upsert). */
  private settle(record: AttemptRecord): void {
    this.attempts.set(record.id, structuredClone(record));
  }
}
