// DeliveryStore's behaviour, what the webhook services use of deliveries, held the same for the MongoDB repository
// (on the embedded database) and for the in-memory fake (docs/architecture.md, "Stores and fakes"): the attempt log
// is an endpoint's own, newest first by id, in pages; an event waits in the retry queue at most once per endpoint,
// with a PENDING record; a cancelled delivery's record says why it was not made; the history counts attempts made.
// Both also `log` attempts made (the recorder's, on the repository), which is how a case gives an endpoint a history.
// The rest of the repository (claims, leases, the backstop scan) is the dispatcher's, tested on the database.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import {
  DeliveryRepository,
  deliveryId,
  newAttemptId,
  pendingRecord,
  type AttemptRecord,
  type DeliveryStore,
  type QueuedDelivery,
} from '../../../../../api/src/features/webhooks/delivery/deliveries.js';
import { FakeDeliveryStore } from '../../../../../api/src/features/webhooks/delivery/fake-deliveries.js';
import { describeStore } from '../../../../../testkit/store-behaviour.js';

type Deliveries = DeliveryStore & Pick<DeliveryRepository, 'log'>;

const at = (minute: number) => new Date(Date.UTC(2026, 10, 20, 10, minute));

function delivery(accountId: string, endpointId: string, overrides: Partial<QueuedDelivery> = {}): QueuedDelivery {
  const eventId = overrides.eventId ?? randomUUID();
  return {
    id: deliveryId(eventId, endpointId),
    accountId,
    endpointId,
    eventId,
    eventType: 'patient.created',
    attempt: 2,
    trigger: 'RECOVER',
    nextAttemptAt: at(5),
    logId: newAttemptId(),
    createdAt: at(1),
    ...overrides,
  };
}

function attempt(accountId: string, endpointId: string, overrides: Partial<AttemptRecord> = {}): AttemptRecord {
  return {
    id: newAttemptId(),
    accountId,
    endpointId,
    eventId: randomUUID(),
    eventType: 'patient.created',
    attempt: 1,
    trigger: 'SCHEDULED',
    status: 'SUCCEEDED',
    responseStatus: 200,
    durationMs: 12,
    error: null,
    attemptedAt: at(1),
    nextAttemptAt: null,
    createdAt: at(1),
    ...overrides,
  };
}

/** Newest first, as the log is listed. */
const newestFirst = (records: AttemptRecord[]) => [...records].sort((a, b) => (a.id < b.id ? 1 : -1));

describeStore<Deliveries, DeliveryRepository>(
  'webhooks: delivery stores',
  {
    mongo: {
      name: 'DeliveryRepository (MongoDB)',
      open: async ({ db, locks }) => {
        const repository = new DeliveryRepository(db, locks);
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakeDeliveryStore', open: async () => new FakeDeliveryStore() },
  },
  ({ store, it }) => {
    let account: string;
    let endpoint: string;
    beforeEach(() => {
      [account, endpoint] = [randomUUID(), randomUUID()];
    });

    it("lists an endpoint's log newest first, in pages strictly older than the last, and this account's only", async () => {
      const records = Array.from({ length: 5 }, () => attempt(account, endpoint));
      await store().log(records);
      await store().log([attempt(account, randomUUID()), attempt(randomUUID(), endpoint)]); // not this log
      const [a, b, c, d, e] = newestFirst(records);
      const first = await store().list(account, endpoint, { limit: 2 });
      expect(first).to.deep.equal({ items: [a, b], hasMore: true });
      expect(await store().list(account, endpoint, { limit: 2, before: b!.id })).to.deep.equal({
        items: [c, d],
        hasMore: true,
      });
      expect(await store().list(account, endpoint, { limit: 2, before: d!.id })).to.deep.equal({
        items: [e],
        hasMore: false,
      });
      expect(await store().list(account, endpoint, { limit: 5 }), 'exactly a page').to.deep.equal({
        items: [a, b, c, d, e],
        hasMore: false,
      });
      expect(await store().list(randomUUID(), endpoint, { limit: 5 }), 'another account').to.deep.equal({
        items: [],
        hasMore: false,
      });
      expect(await store().list(account, randomUUID(), { limit: 5 }), 'another endpoint').to.deep.equal({
        items: [],
        hasMore: false,
      });
    });

    it('lists the records of one status, in pages alike', async () => {
      const failed = Array.from({ length: 3 }, () =>
        attempt(account, endpoint, { status: 'FAILED', responseStatus: 500, error: 'HTTP 500' }),
      );
      await store().log([...failed, attempt(account, endpoint), attempt(account, endpoint)]);
      const [a, b, c] = newestFirst(failed);
      expect(await store().list(account, endpoint, { limit: 2, status: 'FAILED' })).to.deep.equal({
        items: [a, b],
        hasMore: true,
      });
      expect(await store().list(account, endpoint, { limit: 2, status: 'FAILED', before: b!.id })).to.deep.equal({
        items: [c],
        hasMore: false,
      });
      expect((await store().list(account, endpoint, { limit: 10, status: 'PENDING' })).items).to.deep.equal([]);
    });

    it('refuses to log an attempt id twice (duplicate key), writing the rest of the batch', async () => {
      const logged = attempt(account, endpoint);
      await store().log([logged]);
      const other = attempt(account, endpoint);
      const error = await store()
        .log([{ ...logged, status: 'FAILED' }, other])
        .catch((e: unknown) => e);
      expect(error).to.have.property('code', 11000);
      expect((await store().list(account, endpoint, { limit: 10 })).items).to.deep.equal(newestFirst([logged, other]));
    });

    it('queues each delivery with its PENDING record, and answers those queued', async () => {
      const deliveries = [delivery(account, endpoint), delivery(account, endpoint, { trigger: 'MANUAL', attempt: 1 })];
      expect(await store().enqueue(deliveries)).to.deep.equal(deliveries);
      expect((await store().list(account, endpoint, { limit: 10 })).items).to.deep.equal(
        newestFirst(deliveries.map(pendingRecord)),
      );
      expect(await store().enqueue([])).to.deep.equal([]);
    });

    it('leaves a delivery already queued for the event and endpoint as it is, and answers only the new ones', async () => {
      const queued = delivery(account, endpoint);
      await store().enqueue([queued]);
      const again = { ...queued, attempt: 5, logId: newAttemptId(), nextAttemptAt: at(9) };
      const fresh = delivery(account, endpoint);
      const twice = delivery(account, endpoint);
      expect(await store().enqueue([again, fresh, twice, { ...twice, logId: newAttemptId() }])).to.deep.equal([
        fresh,
        twice,
      ]);
      expect((await store().list(account, endpoint, { limit: 10 })).items, 'no record for those left').to.deep.equal(
        newestFirst([queued, fresh, twice].map(pendingRecord)),
      );
      const elsewhere = delivery(account, randomUUID(), { eventId: queued.eventId });
      expect(await store().enqueue([elsewhere]), 'the same event to another endpoint').to.deep.equal([elsewhere]);
    });

    it("cancels the endpoint's queued deliveries, each record saying why it was not made, and those alone", async () => {
      const queued = [delivery(account, endpoint), delivery(account, endpoint)];
      const otherEndpoint = delivery(account, randomUUID());
      const otherAccount = delivery(randomUUID(), endpoint);
      await store().enqueue([...queued, otherEndpoint, otherAccount]);
      const made = attempt(account, endpoint, { eventId: queued[0]!.eventId, status: 'FAILED', responseStatus: 500 });
      await store().log([made]);

      expect(await store().cancel(account, endpoint, 'the endpoint was deleted')).to.equal(2);
      const cancelled = queued.map((d) => ({
        ...pendingRecord(d),
        status: 'FAILED' as const,
        error: 'not attempted: the endpoint was deleted',
      }));
      expect((await store().list(account, endpoint, { limit: 10 })).items).to.deep.equal(
        newestFirst([...cancelled, made]),
      );
      expect(await store().cancel(account, endpoint, 'again'), 'nothing left').to.equal(0);
      // The others still wait (queued once), and the cancelled ones can be queued again.
      expect(await store().enqueue([otherEndpoint, otherAccount])).to.deep.equal([]);
      const requeued = queued.map((d) => ({ ...d, logId: newAttemptId() }));
      expect(await store().enqueue(requeued)).to.deep.equal(requeued);
    });

    it('counts the attempts made at each event for the endpoint, and whether one succeeded', async () => {
      const [failedTwice, succeeded, queuedOnly] = [randomUUID(), randomUUID(), randomUUID()];
      const [elsewhere, unknown] = [randomUUID(), randomUUID()];
      const failed = { status: 'FAILED' as const, responseStatus: 503 };
      await store().log([
        attempt(account, endpoint, { eventId: failedTwice, ...failed }),
        attempt(account, endpoint, { eventId: failedTwice, ...failed, attempt: 2 }),
        attempt(account, endpoint, { eventId: succeeded, ...failed }),
        attempt(account, endpoint, { eventId: succeeded, attempt: 2 }),
        attempt(account, randomUUID(), { eventId: elsewhere }),
      ]);
      // Scheduled, not made: a PENDING record, and one cancelled before it was made.
      await store().enqueue([
        delivery(account, endpoint, { eventId: failedTwice, attempt: 3 }),
        delivery(account, endpoint, { eventId: queuedOnly }),
      ]);
      await store().cancel(account, endpoint, 'the endpoint was disabled');

      const history = await store().history(endpoint, [failedTwice, succeeded, queuedOnly, elsewhere, unknown]);
      expect(Object.fromEntries(history)).to.deep.equal({
        [failedTwice]: { attempts: 2, succeeded: false },
        [succeeded]: { attempts: 2, succeeded: true },
      });
      expect(Object.fromEntries(await store().history(endpoint, [succeeded])), 'only those asked').to.deep.equal({
        [succeeded]: { attempts: 2, succeeded: true },
      });
      expect((await store().history(endpoint, [])).size).to.equal(0);
    });
  },
);
