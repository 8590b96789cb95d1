// The token vault against the sandbox EHR (docs/connecting.md, "Token vault"): tokens only sealed, keys that
// rotate, refreshes before expiry and after a 401, one refresh across replicas, a refused grant, a reconnect that
// keeps the connection, and tokens revoked at the EHR with the connection.
import { expect } from 'chai';
import { Keyring } from '../../../../../api/src/features/connections/vault/keyring.js';
import { sealContext } from '../../../../../api/src/features/connections/vault/sealing.js';
import { parseTokenKeys } from '../../../../../api/src/config.js';
import { eventsOf } from '../../../../../testkit/events.js';
import { ShiftedClock } from '../../../../../testkit/clock.js';
import {
  APP_RETURN,
  connectThroughBrowser,
  mintLinkToken,
  startSmartWorld,
  TOKEN_KEY_1,
  TOKEN_KEY_2,
  until,
  type SmartWorld,
} from '../../../../../testkit/smart.js';

interface Sealed {
  aad?: 2;
  kid: string;
  iv: string;
  ct: string;
  tag: string;
}
interface TokenDoc {
  _id: string;
  accountId: string;
  brand: { fhirBaseUrl: string };
  access: Sealed;
  refresh: Sealed | null;
  expiresAt: Date | null;
  version: number;
}

describe('the token vault (sandbox EHR)', function () {
  this.timeout(90_000);
  let world: SmartWorld;
  const keyring = new Keyring([...parseTokenKeys(TOKEN_KEY_2)!, ...parseTokenKeys(TOKEN_KEY_1)!]);
  const clock = new ShiftedClock();
  before(async () => {
    world = await startSmartWorld({ clock });
  });
  after(() => world?.close());

  const tokens = () => world.api.mongo.db.collection<TokenDoc>('connection_tokens');
  const tokenDoc = async (id: string) => (await tokens().findOne({ _id: id }))!;
  const plain = (doc: TokenDoc) => {
    const binding = { accountId: doc.accountId, fhirBaseUrl: doc.brand.fhirBaseUrl };
    return {
      access: keyring.open(doc.access, sealContext(doc._id, 'access', binding, doc.access)),
      refresh: doc.refresh && keyring.open(doc.refresh, sealContext(doc._id, 'refresh', binding, doc.refresh)),
    };
  };
  /** What a connection to the public-v2 brand as ada says its tokens are for. */
  const bound = () => ({
    accountId: world.tenant.accountId,
    fhirBaseUrl: world.ehr.fhirBaseUrl('public-v2'),
    patient: 'ada',
  });
  const appUser = (id: string) =>
    world.api.request('GET', `/api/platform/v1/app-users/${id}`, { key: world.tenant.key });
  const syncNow = (connectionId: string) => {
    clock.advance(61_000); // a sync may be asked for a minute after the last one began
    return world.api.request('POST', `/api/platform/v1/connections/${connectionId}/sync`, { key: world.tenant.key });
  };
  const connect = async (appUserId: string, brand = 'public-v2') => {
    const { back } = await connectThroughBrowser(world, brand, appUserId);
    expect(back.searchParams.get('status'), back.href).to.equal('connected');
    const connectionId = back.searchParams.get('connectionId')!;
    await syncedAfter(appUserId, null);
    return connectionId;
  };
  /** Waits for a sync of the user's first connection that ended after `since`; the connection as shown. */
  const syncedAfter = async (appUserId: string, since: string | null) =>
    (
      await until(
        'a finished sync',
        () => appUser(appUserId),
        (res) => {
          const sync = res.body.connections[0]?.sync;
          return sync?.status !== 'RUNNING' && sync?.lastSyncedAt !== null && sync?.lastSyncedAt !== since;
        },
      )
    ).body.connections[0];

  it('keeps tokens only sealed: no collection holds them in plain text', async () => {
    const id = await connect('vault-scan');
    const { access, refresh } = plain(await tokenDoc(id));
    expect(access).to.have.length.greaterThan(20);
    expect(refresh).to.be.a('string');
    for (const { name } of await world.api.mongo.db.listCollections().toArray()) {
      const docs = await world.api.mongo.db.collection(name).find({}).toArray();
      const text = JSON.stringify(docs);
      expect(text.includes(access), `${name} holds the access token`).to.equal(false);
      expect(text.includes(refresh!), `${name} holds the refresh token`).to.equal(false);
    }
    // Nor does any answer: the user's view names the grant, never a token.
    const shown = await appUser('vault-scan');
    expect(shown.text.includes(access)).to.equal(false);
  });

  it('refreshes an expired access token after a 401, storing the rotated refresh token first', async () => {
    const id = await connect('vault-401');
    const before = plain(await tokenDoc(id));
    const refreshes = world.ehr.stats.tokenRequests.refresh_token;
    const since = (await appUser('vault-401')).body.connections[0].sync.lastSyncedAt;
    world.ehr.switches.expireAccessTokens();
    expect((await syncNow(id)).status).to.equal(202);
    const after = await syncedAfter('vault-401', since);
    expect(after.sync.lastError).to.equal(null);
    expect(world.ehr.stats.tokenRequests.refresh_token).to.equal(refreshes + 1);
    const now = plain(await tokenDoc(id));
    expect(now.access).to.not.equal(before.access);
    expect(now.refresh).to.not.equal(before.refresh); // rotated, and the new one is what is stored
  });

  it('rotates keys: old tokens still open, new ones are sealed with the first key', async () => {
    const id = await connect('vault-rotate');
    expect((await tokenDoc(id)).access.kid).to.equal('k1');
    const rotated = await world.replica({ tokenKeys: `${TOKEN_KEY_2},${TOKEN_KEY_1}` });
    const vault = rotated.services.connections.vault;
    const sealedByK1 = plain(await tokenDoc(id)).access;
    expect(await vault.accessToken(id, bound())).to.equal(sealedByK1); // k1 still decrypts
    world.ehr.switches.expireAccessTokens();
    const fresh = await vault.accessToken(id, bound(), sealedByK1); // the server refused it: refreshed, under k2
    const doc = await tokenDoc(id);
    expect(doc.access.kid).to.equal('k2');
    expect(doc.refresh!.kid).to.equal('k2');
    expect(plain(doc).access).to.equal(fresh);
  });

  it('lets exactly one refresh reach the EHR when two replicas need one at once', async () => {
    const id = await connect('vault-race');
    const other = await world.replica();
    await tokens().updateOne({ _id: id }, { $set: { expiresAt: new Date(Date.now() + 10_000) } });
    const refreshes = world.ehr.stats.tokenRequests.refresh_token;
    const release = world.ehr.switches.holdRefresh();
    const first = world.api.services.connections.vault.accessToken(id, bound());
    const second = other.services.connections.vault.accessToken(id, bound());
    const third = other.services.connections.vault.accessToken(id, bound());
    await until(
      'a refresh in flight',
      async () => world.ehr.stats.tokenRequests.refresh_token,
      (n) => n === refreshes + 1,
    );
    release();
    const got = await Promise.all([first, second, third]);
    expect(new Set(got).size).to.equal(1);
    expect(world.ehr.stats.tokenRequests.refresh_token).to.equal(refreshes + 1);
    expect(plain(await tokenDoc(id)).access).to.equal(got[0]);
  });

  it('marks a refused grant REAUTHORIZATION_REQUIRED with its event, and a reconnect keeps the connection id', async () => {
    const id = await connect('vault-reauth');
    // The patient revokes Portico's access at the health system.
    const { refresh } = plain(await tokenDoc(id));
    const revoked = await fetch(`${world.ehr.origin}/oauth/public-v2/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refresh!, client_id: 'portico-public' }),
    });
    expect(revoked.status).to.equal(200);
    world.ehr.switches.expireAccessTokens();
    const since = (await appUser('vault-reauth')).body.connections[0].sync.lastSyncedAt;
    await syncNow(id);
    const failed = await until(
      'the sync to fail',
      () => appUser('vault-reauth'),
      (res) => res.body.connections[0]?.sync?.status === 'FAILED',
    );
    expect(failed.body.connections[0], JSON.stringify(failed.body)).to.deep.include({
      id,
      status: 'REAUTHORIZATION_REQUIRED',
      statusReason: 'invalid_grant',
    });
    expect(failed.body.connections[0].sync.lastError).to.equal('reauthorization_required');
    expect(failed.body.state).to.equal('ACTIVE'); // the records synced so far are still served
    expect(await tokens().findOne({ _id: id })).to.equal(null);
    const events = await eventsOf(world.api.mongo.db, world.tenant.accountId);
    const mine = events.filter((e) => (e.data as { connectionId?: string }).connectionId === id).map((e) => e.type);
    expect(mine).to.include.members(['connection.reauthorization_required', 'connection.sync_failed']);

    // Signing in as someone else is refused, and mixes nothing into the connection.
    const wrong = await connectThroughBrowser(
      world,
      'public-v2',
      'vault-reauth',
      { username: 'grace' },
      { connectionId: id },
    );
    expect(wrong.back.searchParams.get('error')).to.equal('patient_mismatch');
    expect((await appUser('vault-reauth')).body.connections[0]).to.deep.include({
      status: 'REAUTHORIZATION_REQUIRED',
      patient: 'ada',
    });
    const { back } = await connectThroughBrowser(world, 'public-v2', 'vault-reauth', {}, { connectionId: id });
    expect(back.searchParams.get('status')).to.equal('connected');
    expect(back.searchParams.get('connectionId')).to.equal(id);
    const renewed = await syncedAfter('vault-reauth', since);
    expect(renewed).to.deep.include({ id, status: 'ACTIVE' });
    expect(renewed.sync.lastError).to.equal(null);
  });

  it('refuses to reconnect a connection that does not need it', async () => {
    const id = await connect('vault-no-reauth');
    const brandId = world.brands['public-v2'];
    const minted = await world.api.request('POST', '/api/platform/v1/link-tokens', {
      key: world.tenant.key,
      body: {
        appUserId: 'vault-no-reauth',
        appId: world.app.appId,
        redirectUri: APP_RETURN,
        brandId,
        connectionId: id,
      },
    });
    expect(minted.status, minted.text).to.equal(409);
    // A token for a new connection does not reconnect one either.
    const refused = await world.api.request('POST', '/api/sdk/v1/connect-sessions', {
      key: world.app.pk,
      body: {
        appUserId: 'vault-no-reauth',
        brandId,
        redirectUri: APP_RETURN,
        connectionId: id,
        linkToken: await mintLinkToken(world, 'vault-no-reauth', { brandId }),
      },
    });
    expect(refused.status).to.equal(400);
    expect(refused.body.code).to.equal('LINK_TOKEN_MISMATCH');
  });

  it('deletes the tokens and revokes them at the EHR on revoke and on tombstone', async () => {
    const one = await connect('vault-revoke');
    const { refresh } = plain(await tokenDoc(one));
    const revocations = world.ehr.stats.revocations;
    const res = await world.api.request('DELETE', `/api/platform/v1/connections/${one}`, { key: world.tenant.key });
    expect(res.status).to.equal(204);
    expect(await tokens().findOne({ _id: one })).to.equal(null);
    await world.api.services.connections.vault.settled(); // the revocation at the EHR runs after the answer
    expect(world.ehr.stats.revocations).to.equal(revocations + 1);
    // The EHR no longer honours the refresh token.
    const refreshed = await fetch(`${world.ehr.origin}/oauth/public-v2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refresh!, client_id: 'portico-public' }),
    });
    expect(refreshed.status).to.equal(400);

    const two = await connect('vault-tombstone');
    await world.api.request('DELETE', '/api/platform/v1/app-users/vault-tombstone', { key: world.tenant.key });
    expect(await tokens().findOne({ _id: two })).to.equal(null);
    await world.api.services.connections.vault.settled();
    expect(world.ehr.stats.revocations).to.equal(revocations + 2);
  });
});
