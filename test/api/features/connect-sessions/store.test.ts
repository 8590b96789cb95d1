// SessionStore's behaviour, held the same for the MongoDB repository (on the embedded database) and for the
// in-memory fake (docs/architecture.md, "Stores and fakes"): a session is the account's alone, and completes once,
// through a claim that only a lapsed claim's take-over can move to another complete.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { FakeSessionStore } from '../../../../api/src/features/connect-sessions/fake-store.js';
import {
  SessionRepository,
  type ConnectSession,
  type SessionStore,
} from '../../../../api/src/features/connect-sessions/store.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

const at = (second: number) => new Date(Date.UTC(2026, 10, 20, 10, 0, second));

function session(overrides: Partial<ConnectSession> = {}): ConnectSession {
  return {
    id: randomUUID(),
    accountId: randomUUID(),
    appId: randomUUID(),
    appUserId: 'user-1',
    brandId: 'brand-1',
    status: 'PENDING',
    createdAt: at(0),
    expiresAt: at(50),
    completedAt: null,
    connectionId: null,
    claimUntil: null,
    ...overrides,
  };
}

describeStore<SessionStore>(
  'connect-sessions: session stores',
  {
    mongo: {
      name: 'SessionRepository (MongoDB)',
      open: async ({ db, locks }) => {
        const repository = new SessionRepository(db, locks);
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakeSessionStore', open: async () => new FakeSessionStore() },
  },
  ({ store, it }) => {
    it('reads a session back for its account only, and nothing for an unknown id', async () => {
      const stored = session();
      await store().insert(stored);
      expect(await store().get(stored.accountId, stored.id)).to.deep.equal(stored);
      expect(await store().get(randomUUID(), stored.id), 'another account').to.equal(null);
      expect(await store().get(stored.accountId, randomUUID())).to.equal(null);
    });

    it('refuses an id that exists (duplicate key), keeping the first session', async () => {
      const stored = session();
      await store().insert(stored);
      const error = await store()
        .insert({ ...stored, brandId: 'brand-2' })
        .catch((e: unknown) => e);
      expect(error).to.have.property('code', 11000);
      expect(await store().get(stored.accountId, stored.id)).to.deep.equal(stored);
    });

    it('claims a pending session once: the first complete gets it, another that read it pending not', async () => {
      const stored = session();
      await store().insert(stored);
      const [first, second] = [randomUUID(), randomUUID()];
      const claimed = await store().claim(stored, first, at(1), at(31));
      expect(claimed).to.deep.equal({ ...stored, status: 'COMPLETING', connectionId: first, claimUntil: at(31) });
      expect(await store().claim(stored, second, at(2), at(32))).to.equal(null);
      expect(await store().get(stored.accountId, stored.id)).to.deep.equal(claimed);
    });

    it('takes over a lapsed claim with its connection id, only once lapsed and while it still stands', async () => {
      const stored = session();
      await store().insert(stored);
      const connection = randomUUID();
      await store().claim(stored, connection, at(1), at(31));
      const read = (await store().get(stored.accountId, stored.id))!;
      expect(await store().claim(read, connection, at(30), at(60)), 'not lapsed yet').to.equal(null);
      expect(
        await store().claim({ ...read, connectionId: randomUUID() }, connection, at(40), at(70)),
        'another claim',
      ).to.equal(null);
      const taken = await store().claim(read, connection, at(40), at(70));
      expect(taken).to.deep.include({ status: 'COMPLETING', connectionId: connection, claimUntil: at(70) });
      expect(await store().claim(read, connection, at(41), at(71)), 'taken over already: its lease moved on').to.equal(
        null,
      );
    });

    it('completes once, for the claim that stands, and a completed session takes no claim', async () => {
      const stored = session();
      await store().insert(stored);
      expect(await store().complete(stored.id, randomUUID(), at(1)), 'not claimed').to.equal(false);
      const connection = randomUUID();
      await store().claim(stored, connection, at(1), at(31));
      expect(await store().complete(stored.id, randomUUID(), at(2)), 'another claim').to.equal(false);
      expect(await store().complete(stored.id, connection, at(2))).to.equal(true);
      expect(await store().complete(stored.id, connection, at(3)), 'completed already').to.equal(false);
      const completed = await store().get(stored.accountId, stored.id);
      expect(completed).to.deep.equal({
        ...stored,
        status: 'COMPLETED',
        connectionId: connection,
        completedAt: at(2),
        claimUntil: null,
      });
      expect(await store().claim(stored, randomUUID(), at(4), at(34)), 'read pending').to.equal(null);
      expect(await store().claim(completed!, connection, at(90), at(120)), 'read completed').to.equal(null);
    });

    it('claims and completes nothing for an unknown session', async () => {
      const unknown = session();
      expect(await store().claim(unknown, randomUUID(), at(1), at(31))).to.equal(null);
      expect(await store().complete(unknown.id, randomUUID(), at(1))).to.equal(false);
    });
  },
);
