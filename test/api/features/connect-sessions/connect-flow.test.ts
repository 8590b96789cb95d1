// The connect flow over real HTTP against the embedded database: initiate (publishable key) → complete
// (secret key) → poll the lifecycle probe; revoke and tombstone; every transition's events, and tenant
// isolation on every route.
import { expect } from 'chai';
import { ManualClock } from '../../../../testkit/clock.js';
import { TestApi, type Tenant } from '../../../../testkit/api.js';
import { publishTo, realSources } from '../../../../testkit/catalog.js';
import { appOf, type AppKeys } from '../../../../testkit/apps.js';
import { eventsOf } from '../../../../testkit/events.js';

const SDK = '/api/sdk/v1';
const PLATFORM = '/api/platform/v1';
describe('sdk: connect sessions, app users and the lifecycle probe', () => {
  const clock = new ManualClock(new Date('2026-11-23T09:00:00.000Z'));
  let api: TestApi;
  let tenant: Tenant;
  let other: Tenant;
  let app: AppKeys;
  let brandId: string;

  before(async () => {
    api = await TestApi.start({ clock });
    await publishTo(api, realSources());
    brandId = api.services.activeCatalog.get()!.index.search('mercy', { limit: 1 }).brands[0]!.id;
    tenant = await api.tenant();
    other = await api.tenant();
    app = await appOf(api, tenant);
  });
  after(() => api.close());

  const initiate = (appUserId: string, key = app.pk, brand = brandId) =>
    api.request('POST', `${SDK}/connect-sessions`, { key, body: { appUserId, brandId: brand } });
  const complete = (id: string, key = tenant.key) =>
    api.request('POST', `${PLATFORM}/connect-sessions/${id}/complete`, { key });
  const probe = (appUserId: string, headers: Record<string, string> = {}, key = app.pk) =>
    api.request('GET', `${SDK}/app-users/${encodeURIComponent(appUserId)}/lifecycle`, { key, headers });
  const appUser = (appUserId: string, key = tenant.key) =>
    api.request('GET', `${PLATFORM}/app-users/${encodeURIComponent(appUserId)}`, { key });
  // The clock stands still here, so events are told apart by id, not by time.
  const events = async (accountId = tenant.accountId) =>
    (await eventsOf(api.mongo.db, accountId)).map((e) => [e.type, e.data, e.id] as const);
  const mark = async () => new Set((await events()).map(([, , id]) => id));
  const since = async (seen: Set<string>) =>
    (await events()).filter(([, , id]) => !seen.has(id)).map(([type, data]) => [type, data]);

  it('takes a user from UNLINKED to LIMITED to ACTIVE, with the events of each step', async () => {
    const id = 'user:ada@example.org';
    expect((await probe(id)).body).to.deep.equal({ appUserId: id, state: 'UNLINKED' });
    const before = await mark();

    const started = await initiate(id);
    expect(started.status, started.text).to.equal(201);
    expect(started.body).to.include({
      appUserId: id,
      brandId,
      status: 'PENDING',
      expiresAt: '2026-11-23T09:30:00.000Z',
    });
    expect(started.headers.get('ratelimit-policy')).to.be.a('string');
    expect((await probe(id)).body.state).to.equal('LIMITED');

    const done = await complete(started.body.id);
    expect(done.status, done.text).to.equal(200);
    expect(done.body.connection).to.include({
      appUserId: id,
      appId: app.appId,
      brandId,
      createdAt: '2026-11-23T09:00:00.000Z',
    });
    const connectionId = done.body.connection.id;
    expect((await probe(id)).body.state).to.equal('ACTIVE');

    const user = await appUser(id);
    expect(user.body).to.deep.include({ appUserId: id, state: 'ACTIVE', _version: '2' });
    expect(user.body.connections).to.deep.equal([
      { id: connectionId, appId: app.appId, brandId, createdAt: '2026-11-23T09:00:00.000Z', status: 'ACTIVE' },
    ]);
    expect(await since(before)).to.have.deep.members([
      ['app_user.limited', { appUserId: id, state: 'LIMITED' }],
      ['connection.created', { connectionId, appUserId: id, brandId }],
      ['app_user.activated', { appUserId: id, state: 'ACTIVE' }],
    ]);
  });

  it('answers 304 while the state has not moved, and 200 once it has', async () => {
    const id = 'poller-1';
    const first = await probe(id);
    const etag = first.headers.get('etag')!;
    expect(first.headers.get('cache-control')).to.equal('private, no-cache');
    const again = await probe(id, { 'if-none-match': etag });
    expect(again.status).to.equal(304);
    expect(again.headers.get('etag')).to.equal(etag);
    await initiate(id);
    const moved = await probe(id, { 'if-none-match': etag });
    expect(moved.status).to.equal(200);
    expect(moved.body.state).to.equal('LIMITED');
  });

  it('probes without writing, emitting or taking an initiate token', async () => {
    const id = 'never-provisioned';
    const users = api.mongo.db.collection('app_users');
    const outboxBefore = await api.mongo.db.collection('outbox_events').countDocuments();
    const sessionsBefore = await api.mongo.db.collection('connect_sessions').countDocuments();
    for (let i = 0; i < 25; i++) expect((await probe(id)).status).to.equal(200);
    expect(await users.countDocuments({ appUserId: id })).to.equal(0);
    expect(await api.mongo.db.collection('outbox_events').countDocuments()).to.equal(outboxBefore);
    expect(await api.mongo.db.collection('connect_sessions').countDocuments()).to.equal(sessionsBefore);
    // The whole bucket (10 by default) is still there.
    for (let i = 0; i < 10; i++) expect((await initiate(id)).status).to.equal(201);
    const refused = await initiate(id);
    expect(refused.status).to.equal(429);
    expect(refused.body).to.include({ code: 'RATE_LIMITED', retryable: true });
    expect(Number(refused.headers.get('retry-after'))).to.be.at.least(1);
    expect(refused.headers.get('ratelimit')).to.be.a('string');
  });

  it('refuses an unknown brand (400), a malformed appUserId (400) and the wrong kind of key (401)', async () => {
    expect((await initiate('someone', app.pk, 'no-such-brand')).status).to.equal(400);
    expect((await initiate('bad user id')).status).to.equal(400);
    expect((await initiate('x'.repeat(129))).status).to.equal(400);
    expect((await initiate('someone', tenant.key)).status).to.equal(401);
    expect((await initiate('someone', app.ak)).status).to.equal(401);
    expect((await probe('someone', {}, tenant.key)).status).to.equal(401);
    expect((await probe('bad id!')).status).to.equal(400);
  });

  it("refuses to complete twice, after expiry, or another account's session", async () => {
    const twice = await initiate('twice');
    expect((await complete(twice.body.id, other.key)).status).to.equal(404);
    expect((await complete(twice.body.id)).status).to.equal(200);
    const again = await complete(twice.body.id);
    expect(again.status).to.equal(409);
    expect(again.body.code).to.equal('CONFLICT');

    const late = await initiate('late');
    clock.advance(30 * 60_000);
    expect((await complete(late.body.id)).status).to.equal(409);
    expect((await complete('00000000-0000-4000-8000-000000000000')).status).to.equal(404);
    expect((await complete('not-a-uuid')).status).to.equal(404);
  });

  it('completes a session once when two completes race', async () => {
    const session = await initiate('racer');
    const answers = await Promise.all([
      complete(session.body.id),
      complete(session.body.id),
      complete(session.body.id),
    ]);
    expect(answers.map((a) => a.status).sort()).to.deep.equal([200, 409, 409]);
    const user = await appUser('racer');
    expect(user.body.connections).to.have.length(1);
    expect(
      (await events()).filter(
        ([type, data]) => type === 'connection.created' && (data as { appUserId: string }).appUserId === 'racer',
      ),
    ).to.have.length(1);
  });

  it('never makes a second connection from one session: not after a revoke, nor when a complete died part-way', async () => {
    const session = await initiate('once-only');
    const first = await complete(session.body.id);
    expect(first.status).to.equal(200);
    expect(
      (await api.request('DELETE', `${PLATFORM}/connections/${first.body.connection.id}`, { key: tenant.key })).status,
    ).to.equal(204);
    expect((await complete(session.body.id)).status).to.equal(409);

    // A complete that claimed its session and died before the user listed the connection: once the claim
    // lapses, the next complete finishes it with the connection id the first one chose.
    const stalled = await initiate('taken-over');
    const sessions = api.mongo.db.collection('connect_sessions');
    const chosen = '0193a0c4-7b1e-7c1a-9d2e-3f4a5b6c7d8e';
    await sessions.updateOne(
      { _id: stalled.body.id },
      {
        $set: { status: 'COMPLETING', connectionId: chosen, claimUntil: new Date(clock.now().getTime() + 30_000) },
      },
    );
    expect((await complete(stalled.body.id)).status).to.equal(409); // its claim still stands
    clock.advance(31_000);
    const finished = await complete(stalled.body.id);
    expect(finished.status, finished.text).to.equal(200);
    expect(finished.body.connection.id).to.equal(chosen);
    expect((await appUser('taken-over')).body.connections.map((c: { id: string }) => c.id)).to.deep.equal([chosen]);
    expect((await complete(stalled.body.id)).status).to.equal(409);
  });

  it('revokes connections: the last one moves the user back to LIMITED; revoked, absent and foreign ones are 404', async () => {
    const id = 'two-brands';
    const first = (await complete((await initiate(id)).body.id)).body.connection.id;
    const second = (await complete((await initiate(id)).body.id)).body.connection.id;
    expect((await api.request('DELETE', `${PLATFORM}/connections/${first}`, { key: other.key })).status).to.equal(404);
    expect((await api.request('DELETE', `${PLATFORM}/connections/${first}`, { key: tenant.key })).status).to.equal(204);
    expect((await probe(id)).body.state).to.equal('ACTIVE');
    expect((await api.request('DELETE', `${PLATFORM}/connections/${first}`, { key: tenant.key })).status).to.equal(404);
    const before = await mark();
    expect((await api.request('DELETE', `${PLATFORM}/connections/${second}`, { key: tenant.key })).status).to.equal(
      204,
    );
    expect((await probe(id)).body.state).to.equal('LIMITED');
    expect(await since(before)).to.have.deep.members([
      ['connection.revoked', { connectionId: second, appUserId: id, brandId, by: 'account' }],
      ['app_user.limited', { appUserId: id, state: 'LIMITED' }],
    ]);
    expect((await api.request('DELETE', `${PLATFORM}/connections/not-a-uuid`, { key: tenant.key })).status).to.equal(
      404,
    );
  });

  it('tombstones for good: every connection revoked, then nothing more', async () => {
    const id = 'leaving';
    const connection = (await complete((await initiate(id)).body.id)).body.connection.id;
    const pending = await initiate(id);
    const before = await mark();
    expect((await api.request('DELETE', `${PLATFORM}/app-users/${id}`, { key: tenant.key })).status).to.equal(204);
    expect(await since(before)).to.have.deep.members([
      ['connection.revoked', { connectionId: connection, appUserId: id, brandId, by: 'account' }],
      ['app_user.tombstoned', { appUserId: id, state: 'TOMBSTONED' }],
    ]);
    expect((await api.request('DELETE', `${PLATFORM}/app-users/${id}`, { key: tenant.key })).status).to.equal(204);
    expect(await since(before)).to.have.length(2);
    expect((await probe(id)).body.state).to.equal('TOMBSTONED');
    expect((await initiate(id)).status).to.equal(409);
    expect((await complete(pending.body.id)).status).to.equal(409);
    expect((await appUser(id)).body).to.deep.include({ state: 'TOMBSTONED', connections: [] });
    expect((await api.request('DELETE', `${PLATFORM}/connections/${connection}`, { key: tenant.key })).status).to.equal(
      404,
    );
    // A user never seen can be tombstoned too.
    expect(
      (await api.request('DELETE', `${PLATFORM}/app-users/never-seen-leaver`, { key: tenant.key })).status,
    ).to.equal(204);
    expect((await probe('never-seen-leaver')).body.state).to.equal('TOMBSTONED');
  });

  it('tombstones only at the version If-Match names (412 otherwise, nothing changed)', async () => {
    const id = 'conditional-leaver';
    await initiate(id);
    const current = await appUser(id);
    expect(current.headers.get('etag')).to.equal('"1"');
    const stale = await api.request('DELETE', `${PLATFORM}/app-users/${id}`, {
      key: tenant.key,
      headers: { 'if-match': '"7"' },
    });
    expect(stale.status).to.equal(412);
    expect((await probe(id)).body.state).to.equal('LIMITED');
    expect(
      (
        await api.request('DELETE', `${PLATFORM}/app-users/${id}`, {
          key: tenant.key,
          headers: { 'if-match': 'W/"1"' },
        })
      ).status,
    ).to.equal(412);
    expect(
      (
        await api.request('DELETE', `${PLATFORM}/app-users/${id}`, {
          key: tenant.key,
          headers: { 'if-match': 'garbage' },
        })
      ).status,
    ).to.equal(400);
    expect(
      (await api.request('DELETE', `${PLATFORM}/app-users/${id}`, { key: tenant.key, headers: { 'if-match': '"1"' } }))
        .status,
    ).to.equal(204);
    expect((await probe(id)).body.state).to.equal('TOMBSTONED');
    expect(
      (
        await api.request('DELETE', `${PLATFORM}/app-users/never-seen-conditional`, {
          key: tenant.key,
          headers: { 'if-match': '"0"' },
        })
      ).status,
    ).to.equal(204);
  });

  it('ends a complete racing a tombstone in one consistent state', async () => {
    for (let round = 0; round < 5; round++) {
      const id = `race-${round}`;
      const session = await initiate(id);
      await Promise.all([
        complete(session.body.id),
        api.request('DELETE', `${PLATFORM}/app-users/${id}`, { key: tenant.key }),
      ]);
      const user = (await appUser(id)).body;
      expect(user).to.deep.include({ state: 'TOMBSTONED', connections: [] });
      const mine = (await events())
        .filter(([, data]) => (data as { appUserId?: string }).appUserId === id)
        .map(([type]) => type);
      // Either the complete came first (created, then revoked by the tombstone) or the tombstone did (no connection).
      expect([
        ['app_user.activated', 'app_user.limited', 'app_user.tombstoned', 'connection.created', 'connection.revoked'],
        ['app_user.limited', 'app_user.tombstoned'],
      ]).to.deep.include(mine.sort());
    }
  });

  it('keeps app users apart by account: the same appUserId is another user in another account', async () => {
    const otherApp = await appOf(api, other);
    await complete((await initiate('shared-name')).body.id);
    expect((await probe('shared-name', {}, otherApp.pk)).body.state).to.equal('UNLINKED');
    expect((await appUser('shared-name', other.key)).body.state).to.equal('UNLINKED');
    expect((await appUser('shared-name')).body.state).to.equal('ACTIVE');
    const scoped = await api.keyFor(tenant.accountId, ['patient:read']);
    expect((await appUser('shared-name', scoped.key)).status).to.equal(403);
  });
});
