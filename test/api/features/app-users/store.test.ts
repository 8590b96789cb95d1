// AppUserStore's behaviour, held the same for the MongoDB repository (on the embedded database, with the probe's
// state cache the API gives it) and for the in-memory fake the lifecycle's unit tests use (docs/architecture.md,
// "Stores and fakes"): one document per user, changed at the version read, and the index of its connections.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { CacheHub } from '../../../../api/src/shared/infra/cache.js';
import { FakeAppUserStore } from '../../../../api/src/features/app-users/fake-store.js';
import {
  APP_USERS,
  AppUserRepository,
  type AppUser,
  type AppUserStore,
  type Connection,
  type ConnectionRecord,
} from '../../../../api/src/features/app-users/store.js';
import { describeStore } from '../../../../testkit/store-behaviour.js';

const at = (minute: number) => new Date(Date.UTC(2026, 10, 20, 10, minute));

function user(accountId: string, overrides: Partial<AppUser> = {}): AppUser {
  return {
    accountId,
    appUserId: `user-${randomUUID()}`,
    state: 'LIMITED',
    connections: [],
    createdAt: at(0),
    updatedAt: at(0),
    version: 1,
    ...overrides,
  };
}

function connection(): Connection {
  return { id: randomUUID(), appId: randomUUID(), brandId: 'brand-1', sessionId: randomUUID(), createdAt: at(1) };
}

function record(accountId: string, appUserId: string, overrides: Partial<ConnectionRecord> = {}): ConnectionRecord {
  return {
    id: randomUUID(),
    accountId,
    appUserId,
    appId: randomUUID(),
    brandId: 'brand-1',
    createdAt: at(1),
    revokedAt: null,
    ...overrides,
  };
}

describeStore<AppUserStore>(
  'app-users: app user stores',
  {
    mongo: {
      name: 'AppUserRepository (MongoDB, cached states)',
      open: async ({ db, locks }) => {
        const caches = await CacheHub.create();
        const repository = new AppUserRepository(
          db,
          locks,
          caches.cache('app-user-states', { max: 100, ttlMs: 60_000 }),
        );
        await repository.init();
        return repository;
      },
    },
    fake: { name: 'FakeAppUserStore', open: async () => new FakeAppUserStore() },
  },
  ({ store, it }) => {
    let account: string;
    beforeEach(() => {
      account = randomUUID();
    });

    it('knows no user never seen: null, and UNLINKED for the probe', async () => {
      expect(await store().find(account, 'never-seen')).to.equal(null);
      expect(await store().state(account, 'never-seen')).to.deep.equal({ state: 'UNLINKED' });
    });

    it('creates a user once: false when someone else created it first, true for its own change repeated', async () => {
      const created = user(account);
      expect(await store().state(account, created.appUserId)).to.deep.equal({ state: 'UNLINKED' }); // cached now
      const changeId = randomUUID();
      expect(await store().create(created, changeId)).to.equal(true);
      expect(await store().find(account, created.appUserId)).to.deep.equal(created);
      expect(await store().state(account, created.appUserId)).to.deep.equal({ state: 'LIMITED' });
      expect(await store().create({ ...created, state: 'ACTIVE' }, randomUUID()), 'someone else').to.equal(false);
      expect(await store().create(created, changeId), 'its own first attempt').to.equal(true);
      expect(await store().find(account, created.appUserId)).to.deep.equal(created);
    });

    it("keeps each account's users to itself, for the same appUserId", async () => {
      const mine = user(account);
      const theirs = { ...mine, accountId: randomUUID(), state: 'ACTIVE' as const };
      expect(await store().create(mine, randomUUID())).to.equal(true);
      expect(await store().find(theirs.accountId, mine.appUserId)).to.equal(null);
      expect(
        await store().update(theirs.accountId, mine.appUserId, 1, { state: 'ACTIVE' }, at(2), randomUUID()),
      ).to.equal(null);
      expect(await store().create(theirs, randomUUID())).to.equal(true);
      expect(await store().state(account, mine.appUserId)).to.deep.equal({ state: 'LIMITED' });
      expect(await store().state(theirs.accountId, mine.appUserId)).to.deep.equal({ state: 'ACTIVE' });
    });

    it('updates at the version read, bumping it: a stale version changes nothing; the probe sees it', async () => {
      const created = user(account);
      await store().create(created, randomUUID());
      expect(await store().state(account, created.appUserId)).to.deep.equal({ state: 'LIMITED' }); // cached now
      const connections = [connection()];
      const updated = await store().update(
        account,
        created.appUserId,
        1,
        { state: 'ACTIVE', connections },
        at(2),
        randomUUID(),
      );
      expect(updated).to.deep.equal({ ...created, state: 'ACTIVE', connections, updatedAt: at(2), version: 2 });
      expect(
        await store().update(account, created.appUserId, 1, { state: 'TOMBSTONED' }, at(3), randomUUID()),
        'stale',
      ).to.equal(null);
      expect(await store().find(account, created.appUserId)).to.deep.equal(updated);
      expect(await store().state(account, created.appUserId)).to.deep.equal({ state: 'ACTIVE' });
      expect(await store().update(account, 'never-seen', 1, { state: 'ACTIVE' }, at(3), randomUUID())).to.equal(null);
    });

    it('answers an update repeated with its change id with the user as it is now, as done', async () => {
      const created = user(account);
      await store().create(created, randomUUID());
      const changeId = randomUUID();
      const updated = await store().update(account, created.appUserId, 1, { state: 'ACTIVE' }, at(2), changeId);
      expect(await store().update(account, created.appUserId, 1, { state: 'ACTIVE' }, at(2), changeId)).to.deep.equal(
        updated,
      );
      const later = await store().update(account, created.appUserId, 2, { state: 'TOMBSTONED' }, at(3), randomUUID());
      expect(later).to.deep.include({ state: 'TOMBSTONED', version: 3 });
      expect(
        await store().update(account, created.appUserId, 1, { state: 'ACTIVE' }, at(2), changeId),
        'after a later change',
      ).to.deep.equal(later);
    });

    it('names where a change to the user is recorded: its one document', async () => {
      expect(store().target(account, 'user-1', 4)).to.deep.equal({
        collection: APP_USERS,
        id: `${account}/user-1`,
        version: 4,
      });
    });

    it('indexes a connection once, for its account only', async () => {
      const indexed = record(account, 'user-1');
      await store().indexConnection(indexed);
      expect(await store().connection(account, indexed.id)).to.deep.equal(indexed);
      expect(await store().connection(randomUUID(), indexed.id), 'another account').to.equal(null);
      expect(await store().connection(account, randomUUID())).to.equal(null);
      const error = await store()
        .indexConnection({ ...indexed, appUserId: 'user-2' })
        .catch((e: unknown) => e);
      expect(error).to.have.property('code', 11000);
      expect(await store().connection(account, indexed.id)).to.deep.equal(indexed);
    });

    it('marks the connections named revoked, passing over unknown ones and leaving the rest live', async () => {
      const [a, b, c] = [record(account, 'user-1'), record(account, 'user-1'), record(account, 'user-1')];
      for (const r of [a, b, c]) await store().indexConnection(r);
      await store().markRevoked([a.id, randomUUID(), b.id], at(5));
      expect(await store().connection(account, a.id)).to.deep.equal({ ...a, revokedAt: at(5) });
      expect(await store().connection(account, b.id)).to.deep.equal({ ...b, revokedAt: at(5) });
      expect(await store().connection(account, c.id)).to.deep.equal(c);
      await store().markRevoked([], at(6));
    });
  },
);
