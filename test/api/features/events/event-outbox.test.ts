// EventOutbox's behaviour, held the same for the durable outbox (Outbox, on the embedded database) and for the
// in-memory fake the services' unit tests record their events in (docs/architecture.md, "Stores and fakes" and
// "Outbox"): an event is built at the outbox's time; the events of a change that returned a value are committed, in
// order, as they were when recorded; those of a change that answered nothing or threw are not; appended events are
// committed at once. Where the durable outbox cannot trust a change's answer it asks the changed document, and keeps
// the events staged until it can tell; the fake trusts its fake stores' answers (fake-outbox.ts): those cases are
// the repository's alone. What the dispatcher and recovery then do with the events is outbox.test.ts's.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { FakeOutbox } from '../../../../api/src/features/events/fake-outbox.js';
import {
  createOutboxIndexes,
  OUTBOX_EVENTS,
  toStored,
  type OutboxDocument,
} from '../../../../api/src/features/events/outbox-collection.js';
import { Outbox, type EventOutbox } from '../../../../api/src/features/events/outbox.js';
import type { ChangeTarget, DomainEvent } from '../../../../api/src/features/events/domain-event.js';
import { CHANGE_RING } from '../../../../api/src/shared/infra/change-scope.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

/** The documents the suite's changes write: a change records its change id in its target, as VersionedCollection does. */
const CHANGED = 'changed_documents';

/** The outbox's clock: each store is opened with a new one. */
let clock: ManualClock;
const start = () => (clock = new ManualClock(new Date('2026-11-20T10:00:00.000Z')));

describeStore<EventOutbox>(
  'events: event outboxes',
  {
    mongo: {
      name: 'Outbox (MongoDB)',
      open: async ({ db, locks }) => {
        await createOutboxIndexes(db);
        return new Outbox(db, locks, start(), { stageMs: 60_000 });
      },
    },
    fake: { name: 'FakeOutbox', open: async () => new FakeOutbox(start()) },
  },
  ({ store, database, kind, it, mongoOnly }) => {
    /** A document no change has written yet, for a change to name as its target. */
    const target = (): ChangeTarget => ({ collection: CHANGED, id: randomUUID(), version: 1 });
    const patientCreated = () => {
      const id = randomUUID();
      return store().event('patient.created', account, `patient:${id}`, { patientId: id });
    };
    let account: string;
    beforeEach(() => {
      account = randomUUID();
    });

    /**
     * The committed events among `made` (the case's events, in the order it made them), in the order they were
     * committed: the fake's list; the durable outbox's documents past staging, by commit time. One change's events
     * are committed at one instant, so among them the order they were made in stands.
     */
    async function committed(made: DomainEvent[]): Promise<DomainEvent[]> {
      const ids = made.map((e) => e.id);
      if (kind === 'fake') return (store() as FakeOutbox).committed.filter((e) => ids.includes(e.id));
      const docs = await database()
        .db.collection<OutboxDocument>(OUTBOX_EVENTS)
        .find({ _id: { $in: ids }, status: { $ne: 'staged' } })
        .toArray();
      return docs
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || ids.indexOf(a._id) - ids.indexOf(b._id))
        .map((doc) => {
          const { status: _status, claims: _claims, ...event } = toStored(doc);
          return event;
        });
    }

    /** The durable outbox's document of an event, null when it has none (the fake has none of any). */
    const stored = (id: string) =>
      database()
        .db.collection<OutboxDocument>(OUTBOX_EVENTS)
        .findOne({ _id: id }, { projection: { status: 1 } });

    it("builds an event of the outbox's time, with an id of its own, and commits nothing by building it", async () => {
      const event = store().event('app_user.limited', account, 'app_user:u-1', { appUserId: 'u-1' });
      expect(event).to.deep.equal({
        id: event.id,
        type: 'app_user.limited',
        customerAccountId: account,
        subject: 'app_user:u-1',
        data: { appUserId: 'u-1' },
        occurredAt: clock.now(),
      });
      expect(event.id).to.be.a('string').and.not.equal('');
      clock.advance(1_000);
      const next = store().event('app_user.limited', account, 'app_user:u-1', { appUserId: 'u-1' });
      expect(next.id).to.not.equal(event.id);
      expect(next.occurredAt).to.deep.equal(clock.now());
      expect(await committed([event, next])).to.deep.equal([]);
    });

    it('commits the events of a change that returned a value, and answers that value', async () => {
      const events = [patientCreated(), patientCreated()];
      const changeIds: string[] = [];
      const made = { id: 'p-1' };
      const result = await store().record(events, target(), async (changeId) => {
        changeIds.push(changeId);
        expect(await committed(events), 'not before the change').to.deep.equal([]);
        return made;
      });
      expect(result).to.deep.equal(made);
      expect(changeIds).to.have.length(1); // the change runs once
      expect(await committed(events)).to.deep.equal(events);
    });

    it('gives every change a change id of its own', async () => {
      const changeIds: string[] = [];
      for (let i = 0; i < 3; i++)
        await store().record([patientCreated()], target(), async (changeId) => changeIds.push(changeId));
      expect(new Set(changeIds).size).to.equal(3);
      for (const changeId of changeIds) expect(changeId).to.be.a('string').and.not.equal('');
    });

    it('takes any answer but undefined for a change made: null, false, 0 and "" commit its events', async () => {
      const events: DomainEvent[] = [];
      for (const answer of [null, false, 0, '']) {
        const event = patientCreated();
        events.push(event);
        expect(await store().record([event], target(), async () => answer)).to.equal(answer);
      }
      expect(await committed(events)).to.deep.equal(events);
    });

    it('drops the events of a change that answered undefined (nothing to do) and its target does not hold', async () => {
      const events = [patientCreated(), patientCreated()];
      expect(await store().record(events, target(), async () => undefined)).to.equal(undefined);
      expect(await committed(events)).to.deep.equal([]);
    });

    it('commits none of the events of a change that threw, and lets its error through', async () => {
      const events = [patientCreated()];
      const thrown = new Error('connection reset');
      const error = await store()
        .record(events, target(), async () => {
          throw thrown;
        })
        .catch((e: unknown) => e);
      expect(error).to.equal(thrown);
      expect(await committed(events)).to.deep.equal([]);
    });

    it('runs a change without events as any other, answering its value', async () => {
      expect(await store().record([], target(), async () => 'done')).to.equal('done');
      expect(await store().record([], target(), async () => undefined)).to.equal(undefined);
    });

    it('commits appended events at once, in order, and nothing for an empty list', async () => {
      const events = [
        store().event('webhook_endpoint.disabled', account, 'webhook_endpoint:e-1', { webhookEndpointId: 'e-1' }),
        { ...store().event('webhook.test', account, 'webhook_endpoint:e-2', {}), targetEndpointId: 'e-2' },
      ];
      await store().append([]);
      await store().append(events);
      expect(await committed(events)).to.deep.equal(events);
    });

    it('keeps the committed events in the order they were committed, appended and recorded alike', async () => {
      // Made in one order, committed in another: the order is the commits'.
      const [first, second, third, fourth] = [patientCreated(), patientCreated(), patientCreated(), patientCreated()];
      await store().record([third, fourth], target(), async () => 'made');
      clock.advance(1_000);
      await store().record([second], target(), async () => undefined); // dropped
      clock.advance(1_000);
      await store().append([first]);
      clock.advance(1_000);
      await store().record([second], target(), async () => 'made on a second try');
      expect(await committed([first, second, third, fourth])).to.deep.equal([third, fourth, first, second]);
    });

    it('keeps each event as it was recorded or appended: what its object undergoes afterwards does not reach it', async () => {
      const recorded = patientCreated();
      const kept = structuredClone(recorded);
      await store().record([recorded], target(), async () => {
        recorded.data.patientId = 'changed by the change';
        return 'made';
      });
      const appended = patientCreated();
      const keptAppended = structuredClone(appended);
      await store().append([appended]);
      appended.subject = 'changed after';
      recorded.data.note = 'changed after';
      expect(await committed([kept, keptAppended])).to.deep.equal([kept, keptAppended]);
    });

    mongoOnly(
      'keeps the events of a change that threw staged, for recovery to commit or drop by what its target holds',
      "a fake store's change that throws did nothing: the fake keeps no staged events and needs no recovery",
      async () => {
        const event = patientCreated();
        await store()
          .record([event], target(), async () => {
            throw new Error('connection reset');
          })
          .catch(() => undefined);
        expect(await stored(event.id)).to.deep.include({ status: 'staged' });
      },
    );

    mongoOnly(
      'commits the events of a change that answered undefined although its target records it (a write retried on its first attempt)',
      "the fake reads no target: a fake store's change that answers nothing did nothing",
      async () => {
        const event = patientCreated();
        const changed = target();
        const result = await store().record([event], changed, async (changeId) => {
          await database()
            .db.collection<{ _id: string; _version: number; _changes: Record<string, string> }>(CHANGED)
            .insertOne({ _id: changed.id, _version: 1, _changes: { [String(1 % CHANGE_RING)]: changeId } });
          return undefined; // as a store that reads the retry's duplicate key as "someone else was first" would
        });
        expect(result).to.equal(undefined);
        expect(await committed([event])).to.deep.equal([event]);
      },
    );
  },
);
