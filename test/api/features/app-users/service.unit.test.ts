// The app-user lifecycle's rules against the in-memory store and outbox, with its connections' (features/connections,
// lifecycle.ts): each transition, its events and the change each event was recorded with, refusals, a lost race
// decided again on what was written, and what a revoked connection held elsewhere let go.
import { expect } from 'chai';
import {
  createFakeAppUserDocuments,
  type FakeAppUserStore,
} from '../../../../api/src/features/app-users/fake-store.js';
import { AppUserService } from '../../../../api/src/features/app-users/service.js';
import { ConnectionService, MAX_CONNECTIONS_PER_USER } from '../../../../api/src/features/connections/lifecycle.js';
import { FakeOutbox } from '../../../../api/src/features/events/fake-outbox.js';
import { ManualClock } from '../../../../testkit/clock.js';

const ACCOUNT = '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const APP = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
let n = 0;
const link = (brandId = 'brand-a') => ({
  appId: APP,
  brandId,
  sessionId: `session-${++n}`,
  connectionId: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`,
});

describe('app users: the lifecycle service (fakes)', () => {
  let store: FakeAppUserStore;
  let outbox: FakeOutbox;
  let service: AppUserService;
  let connections: ConnectionService;
  /** The connections whose tokens were forgotten and whose syncs were removed, in order. */
  let ended: { forgotten: string[]; removed: string[] };
  const clock = new ManualClock(new Date('2026-11-23T10:00:00.000Z'));

  beforeEach(() => {
    outbox = new FakeOutbox(clock);
    const documents = createFakeAppUserDocuments(clock, { outbox });
    const { transitions } = documents;
    store = documents.store;
    ended = { forgotten: [], removed: [] };
    connections = new ConnectionService({
      users: store,
      transitions,
      outbox,
      tokens: { forget: async (id) => void ended.forgotten.push(id) },
      syncs: { remove: async (id) => void ended.removed.push(id) },
      clock,
    });
    service = new AppUserService({ users: store, transitions, connections });
  });
  const types = () => outbox.committed.map((e) => e.type);

  it('provisions LIMITED once, recording app_user.limited with the user document at version 1', async () => {
    const user = await service.provision(ACCOUNT, 'u1');
    expect(user).to.include({ state: 'LIMITED', version: 1 });
    await service.provision(ACCOUNT, 'u1');
    expect(types()).to.deep.equal(['app_user.limited']);
    expect(outbox.targets.get(outbox.committed[0]!.id)).to.deep.equal({
      collection: 'app_users',
      id: `${ACCOUNT}/u1`,
      version: 1,
    });
  });

  it('activates on the first connection only, and goes back to LIMITED with the last revoke', async () => {
    await service.provision(ACCOUNT, 'u2');
    const first = await connections.connect(ACCOUNT, 'u2', link());
    const second = await connections.connect(ACCOUNT, 'u2', link('brand-b'));
    expect((await service.state(ACCOUNT, 'u2')).state).to.equal('ACTIVE');
    expect(await connections.revoke(ACCOUNT, first.id)).to.equal(true);
    expect((await service.state(ACCOUNT, 'u2')).state).to.equal('ACTIVE');
    expect(await connections.revoke(ACCOUNT, second.id)).to.equal(true);
    expect(await connections.revoke(ACCOUNT, second.id)).to.equal(false);
    expect((await service.state(ACCOUNT, 'u2')).state).to.equal('LIMITED');
    expect(types()).to.deep.equal([
      'app_user.limited',
      'connection.created',
      'app_user.activated',
      'connection.created',
      'connection.revoked',
      'connection.revoked',
      'app_user.limited',
    ]);
    expect((await store.connection(ACCOUNT, first.id))!.revokedAt).to.be.instanceOf(Date);
    expect(ended).to.deep.equal({ forgotten: [first.id, second.id], removed: [first.id, second.id] });
  });

  it('keeps a connection of another account out of reach', async () => {
    await service.provision(ACCOUNT, 'u3');
    const connection = await connections.connect(ACCOUNT, 'u3', link());
    expect(await connections.revoke('00000000-0000-4000-8000-00000000ffff', connection.id)).to.equal(false);
    expect((await service.state(ACCOUNT, 'u3')).state).to.equal('ACTIVE');
  });

  it('tombstones for good, revoking every connection; refuses to connect or provision afterwards', async () => {
    await service.provision(ACCOUNT, 'u4');
    const connection = await connections.connect(ACCOUNT, 'u4', link());
    await service.tombstone(ACCOUNT, 'u4');
    await service.tombstone(ACCOUNT, 'u4');
    expect(types().slice(-2)).to.deep.equal(['connection.revoked', 'app_user.tombstoned']);
    expect(ended).to.deep.equal({ forgotten: [connection.id], removed: [connection.id] });
    expect((await store.connection(ACCOUNT, connection.id))!.revokedAt).to.be.instanceOf(Date);
    await expectConflict(service.provision(ACCOUNT, 'u4'));
    await expectConflict(connections.connect(ACCOUNT, 'u4', link()));
    expect((await service.find(ACCOUNT, 'u4'))!.connections).to.deep.equal([]);
  });

  it('makes one connection of a session however often it is asked, and caps live connections', async () => {
    await service.provision(ACCOUNT, 'u5');
    const once = link();
    const made = await connections.connect(ACCOUNT, 'u5', once);
    expect(await connections.connect(ACCOUNT, 'u5', once)).to.deep.equal(made); // the same claim finishing: the same connection
    await expectConflict(
      connections.connect(ACCOUNT, 'u5', { ...once, connectionId: '00000000-0000-4000-8000-0000000000aa' }),
    );
    for (let i = 1; i < MAX_CONNECTIONS_PER_USER; i++) await connections.connect(ACCOUNT, 'u5', link());
    const refused = await connections.connect(ACCOUNT, 'u5', link()).catch((e: { code: string }) => e.code);
    expect(refused).to.equal('LIMIT_EXCEEDED');
  });

  it('decides again when another change wrote first (a lost race)', async () => {
    await service.provision(ACCOUNT, 'u6');
    const update = store.update.bind(store);
    let raced = false;
    store.update = async (...args) => {
      if (!raced) {
        raced = true;
        await service.tombstone(ACCOUNT, 'u6'); // lands between the connect's read and its write
      }
      return update(...args);
    };
    await expectConflict(connections.connect(ACCOUNT, 'u6', link()));
    expect(types()).to.deep.equal(['app_user.limited', 'app_user.tombstoned']);
  });
});

async function expectConflict(promise: Promise<unknown>): Promise<void> {
  const code = await promise.then(
    () => 'none',
    (e: { code?: string }) => e.code,
  );
  expect(code).to.equal('CONFLICT');
}
