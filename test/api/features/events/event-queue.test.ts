// EventQueue's behaviour, held the same for the MongoDB queue (on the embedded database, fed by the durable outbox
// in the same collection) and for the in-memory fake (docs/architecture.md, "Stores and fakes" and "Outbox"): a
// committed event is held by one dispatcher at a time on a lease that its holder renews, hands back or ends by
// marking the event done; the backstop scan finds what nobody holds, oldest commit first; the backlog counts what
// waits; done events are read back for recover, a page at a time, until they are pruned.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { MongoEventQueue, type EventQueue } from '../../../../api/src/features/events/event-queue.js';
import { FakeEventQueue } from '../../../../api/src/features/events/fake-event-queue.js';
import { OUTBOX_EVENTS } from '../../../../api/src/features/events/outbox-collection.js';
import { Outbox } from '../../../../api/src/features/events/outbox.js';
import type { DomainEvent } from '../../../../api/src/features/events/domain-event.js';
import { ManualClock } from '../../../../testkit/clock.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

/** The queue's clock: each store is opened with a new one. */
let clock: ManualClock;
const start = () => (clock = new ManualClock(new Date('2026-11-20T10:00:00.000Z')));
/** `seconds` from now on the queue's clock. */
const later = (seconds: number) => new Date(clock.now().getTime() + seconds * 1_000);

describeStore<EventQueue>(
  'events: event queues',
  {
    mongo: {
      name: 'MongoEventQueue (MongoDB)',
      open: async ({ db, locks }) => {
        // The scans and the backlog read the whole collection: each case starts from an empty one.
        await db.collection(OUTBOX_EVENTS).deleteMany({});
        return new MongoEventQueue(db, locks, start());
      },
    },
    fake: { name: 'FakeEventQueue', open: async () => new FakeEventQueue(start()) },
  },
  ({ store, database, kind, it, mongoOnly }) => {
    let account: string;
    beforeEach(() => {
      account = randomUUID();
    });

    const event = (overrides: Partial<DomainEvent> = {}): DomainEvent => ({
      id: randomUUID(),
      type: 'patient.created',
      customerAccountId: account,
      subject: 'patient:p-1',
      data: { patientId: 'p-1' },
      occurredAt: clock.now(),
      ...overrides,
    });

    /** Commits events now, as the outbox does: the durable queue's arrive through the outbox's collection. */
    async function commit(...events: DomainEvent[]): Promise<void> {
      if (kind === 'fake') return (store() as FakeEventQueue).append(events);
      const { db, locks } = database();
      await new Outbox(db, locks, clock).append(events);
    }

    /** Claims the event for `owner` on a lease of a minute, marks it done, and lets no time pass. */
    async function dispatch(id: string, owner = 'd'): Promise<void> {
      expect(await store().claim(id, owner, later(60), clock.now()), `claimed ${id}`).to.not.equal(null);
      await store().markDispatched(id, owner);
    }

    it('reads a committed event back as it was committed, waiting and never claimed, and nothing unknown', async () => {
      const committed = event();
      const targeted = { ...event({ type: 'webhook.test', data: {} }), targetEndpointId: randomUUID() };
      await commit(committed, targeted);
      expect(await store().get(committed.id)).to.deep.equal({ ...committed, status: 'pending', claims: 0 });
      expect(await store().get(targeted.id)).to.deep.equal({ ...targeted, status: 'pending', claims: 0 });
      expect(await store().get(randomUUID())).to.equal(null);
    });

    it('lets one dispatcher at a time hold an event, and another take it once the lease has ended', async () => {
      const committed = event();
      await commit(committed);
      const until = later(60);
      expect(await store().claim(committed.id, 'a', until, clock.now())).to.deep.equal({
        ...committed,
        status: 'pending',
        claims: 1,
      });
      expect(await store().claim(committed.id, 'b', later(60), clock.now()), 'held').to.equal(null);
      expect(await store().claim(committed.id, 'b', later(120), until), 'held to the end of its lease').to.equal(null);
      const after = new Date(until.getTime() + 1);
      expect(await store().claim(committed.id, 'b', later(120), after)).to.deep.include({ claims: 2 });
      expect(await store().claim(randomUUID(), 'a', later(60), clock.now()), 'unknown').to.equal(null);
    });

    it("renews its holder's lease alone, until another has taken the event", async () => {
      const committed = event();
      await commit(committed);
      await store().claim(committed.id, 'a', later(60), clock.now());
      expect(await store().renew(committed.id, 'b', later(600))).to.equal(false);
      expect(await store().renew(committed.id, 'a', later(120))).to.equal(true);
      expect(await store().claim(committed.id, 'b', later(180), later(90)), 'the renewed lease runs').to.equal(null);
      expect(await store().claim(committed.id, 'b', later(180), later(121))).to.deep.include({ claims: 2 });
      expect(await store().renew(committed.id, 'a', later(600)), 'taken').to.equal(false);
      expect(await store().renew(randomUUID(), 'a', later(600)), 'unknown').to.equal(false);
    });

    it('takes back an event its holder hands back, for another to claim at once', async () => {
      const committed = event();
      await commit(committed);
      await store().claim(committed.id, 'a', later(60), clock.now());
      await store().release(committed.id, 'b'); // not b's to hand back
      expect(await store().claim(committed.id, 'b', later(60), clock.now())).to.equal(null);
      await store().release(committed.id, 'a');
      expect(await store().unclaimed(clock.now(), 10)).to.deep.equal([committed.id]);
      expect(await store().claim(committed.id, 'b', later(60), clock.now())).to.deep.include({ claims: 2 });
      expect(await store().renew(committed.id, 'a', later(60)), 'no longer a lease of a').to.equal(false);
    });

    it('marks an event done for its holder alone, and a done event is claimed, renewed and handed back no more', async () => {
      const committed = event();
      await commit(committed);
      await store().markDispatched(committed.id, 'a'); // never claimed
      await store().claim(committed.id, 'a', later(60), clock.now());
      await store().markDispatched(committed.id, 'b');
      expect(await store().get(committed.id)).to.deep.include({ status: 'pending' });
      await store().markDispatched(committed.id, 'a');
      expect(await store().get(committed.id)).to.deep.equal({ ...committed, status: 'dispatched', claims: 1 });
      expect(await store().claim(committed.id, 'b', later(60), later(3_600))).to.equal(null);
      expect(await store().renew(committed.id, 'a', later(60))).to.equal(false);
      await store().release(committed.id, 'a');
      expect(await store().get(committed.id)).to.deep.include({ status: 'dispatched' });
    });

    it('lets the holder whose lease lapsed mark the event done, until another has claimed it', async () => {
      const [lapsed, taken] = [event(), event()];
      await commit(lapsed, taken);
      for (const { id } of [lapsed, taken]) await store().claim(id, 'a', later(60), clock.now());
      await store().claim(taken.id, 'b', later(180), later(61));
      for (const { id } of [lapsed, taken]) await store().markDispatched(id, 'a');
      expect(await store().get(lapsed.id)).to.deep.include({ status: 'dispatched' });
      expect(await store().get(taken.id), "b's now").to.deep.include({ status: 'pending' });
    });

    it('settles an event no endpoint is to hear in one go, unless it is held or done already', async () => {
      const [free, held] = [event(), event()];
      await commit(free, held);
      await store().claim(held.id, 'a', later(60), clock.now());
      expect(await store().settleUntargeted(free.id, clock.now())).to.equal(true);
      expect(await store().get(free.id)).to.deep.equal({ ...free, status: 'dispatched', claims: 0 });
      expect(await store().settleUntargeted(free.id, clock.now()), 'done already').to.equal(false);
      expect(await store().settleUntargeted(held.id, clock.now()), 'held').to.equal(false);
      expect(await store().settleUntargeted(held.id, later(61)), 'its lease ended').to.equal(true);
      expect(await store().settleUntargeted(randomUUID(), clock.now()), 'unknown').to.equal(false);
    });

    it('finds the events nobody holds, oldest commit first, at most `limit`', async () => {
      const [first, second, third, held] = [event(), event(), event(), event()];
      await commit(first);
      clock.advance(1_000);
      await commit(second, held);
      clock.advance(1_000);
      await commit(third);
      await store().claim(held.id, 'a', later(60), clock.now());
      await dispatch(second.id);
      expect(await store().unclaimed(clock.now(), 10)).to.deep.equal([first.id, third.id]);
      expect(await store().unclaimed(clock.now(), 1)).to.deep.equal([first.id]);
      expect(await store().unclaimed(later(61), 10), 'its lease ended').to.deep.equal([first.id, held.id, third.id]);
    });

    it('counts the events waiting, held or not, and how long the oldest has waited since its commit', async () => {
      expect(await store().backlog(clock.now()), 'none').to.deep.equal({ pending: 0, oldestMs: 0 });
      const [oldest, held, done] = [event(), event(), event()];
      await commit(oldest);
      clock.advance(5_000);
      await commit(held, done);
      await store().claim(held.id, 'a', later(60), clock.now());
      await dispatch(done.id);
      clock.advance(2_000);
      expect(await store().backlog(clock.now())).to.deep.equal({ pending: 2, oldestMs: 7_000 });
      await dispatch(oldest.id);
      expect(await store().backlog(clock.now())).to.deep.equal({ pending: 1, oldestMs: 2_000 });
      expect(await store().backlog(new Date(0)), 'a clock behind the commit').to.deep.equal({
        pending: 1,
        oldestMs: 0,
      });
    });

    it("reads the account's done events since a time back, oldest first, a page after another", async () => {
      const t = (second: number) => new Date(Date.UTC(2026, 10, 20, 9, 0, second));
      const [x, y] = [randomUUID(), randomUUID()].sort();
      const before = event({ occurredAt: t(0) });
      const [first, tiedLow, tiedHigh, last] = [
        event({ occurredAt: t(10) }),
        event({ id: x, occurredAt: t(20) }),
        event({ id: y, occurredAt: t(20) }),
        event({ occurredAt: t(30) }),
      ];
      const waiting = event({ occurredAt: t(15) });
      const elsewhere = event({ customerAccountId: randomUUID(), occurredAt: t(15) });
      // Committed in another order than they occurred.
      await commit(last, tiedHigh, before, waiting, elsewhere, tiedLow, first);
      for (const { id } of [last, tiedHigh, before, elsewhere, tiedLow, first]) await dispatch(id);
      const done = (...events: DomainEvent[]) => events.map((e) => ({ ...e, status: 'dispatched', claims: 1 }));

      expect(await store().since(account, t(10), 10)).to.deep.equal(done(first, tiedLow, tiedHigh, last));
      const page = await store().since(account, t(5), 2);
      expect(page).to.deep.equal(done(first, tiedLow));
      const position = { occurredAt: page.at(-1)!.occurredAt, id: page.at(-1)!.id };
      expect(await store().since(account, t(5), 2, position)).to.deep.equal(done(tiedHigh, last));
      expect(await store().since(account, t(5), 2, { occurredAt: t(30), id: last.id })).to.deep.equal([]);
      expect(await store().since(account, t(31), 10), 'nothing since').to.deep.equal([]);
    });

    it('prunes the done events that occurred before a time, and keeps those still waiting', async () => {
      const t = (minute: number) => new Date(Date.UTC(2026, 10, 6, 10, minute));
      const [old, borderline, recent, waiting] = [
        event({ occurredAt: t(0) }),
        event({ occurredAt: t(10) }),
        event({ occurredAt: t(20) }),
        event({ occurredAt: t(0) }),
      ];
      await commit(old, borderline, recent, waiting);
      for (const { id } of [old, borderline, recent]) await dispatch(id);
      expect(await store().prune(t(10))).to.equal(1);
      expect(await store().prune(t(10)), 'nothing more').to.equal(0);
      expect(await store().get(old.id)).to.equal(null);
      for (const { id } of [borderline, recent])
        expect(await store().get(id)).to.deep.include({ status: 'dispatched' });
      expect(await store().get(waiting.id)).to.deep.include({ status: 'pending' });
    });

    mongoOnly(
      "neither hands out nor counts a change's events still staged, whose change may not have happened",
      'the fake queue holds committed events only: the fake outbox keeps none staged (fake-outbox.ts)',
      async () => {
        const staged = event();
        const { db, locks } = database();
        await new Outbox(db, locks, clock)
          .record([staged], { collection: 'changed_documents', id: randomUUID(), version: 1 }, async () => {
            throw new Error('connection reset'); // the change may have happened: its events wait for recovery
          })
          .catch(() => undefined);
        expect(await store().get(staged.id)).to.deep.equal({ ...staged, status: 'staged', claims: 0 });
        expect(await store().claim(staged.id, 'a', later(60), clock.now())).to.equal(null);
        expect(await store().settleUntargeted(staged.id, clock.now())).to.equal(false);
        expect(await store().unclaimed(later(3_600), 10)).to.deep.equal([]);
        expect(await store().backlog(clock.now())).to.deep.equal({ pending: 0, oldestMs: 0 });
      },
    );
  },
);
