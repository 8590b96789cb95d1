// Link tokens (docs/connecting.md, "Link tokens"): a publishable key is public, so a session that completes by
// itself (one with a redirect URI) starts only with a token the app's backend minted for that very user. The
// review's worst finding, replayed: someone holding the app's publishable key and a victim's guessable appUserId
// can no longer start a sign-in that connects their own records to the victim.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { ManualClock } from '../../../../testkit/clock.js';
import {
  APP_RETURN,
  connectThroughBrowser,
  mintLinkToken,
  startSmartWorld,
  type SmartWorld,
} from '../../../../testkit/smart.js';

describe('link tokens: only the app backend starts a sign-in (sandbox EHR)', function () {
  this.timeout(60_000);
  let world: SmartWorld;
  const clock = new ManualClock();
  before(async () => {
    world = await startSmartWorld({ clock });
  });
  after(() => world?.close());

  const initiate = (body: Record<string, unknown>) =>
    world.api.request('POST', '/api/sdk/v1/connect-sessions', { key: world.app.pk, body });
  const mint = (body: Record<string, unknown>, key = world.tenant.key) =>
    world.api.request('POST', '/api/platform/v1/link-tokens', { key, body });
  const launchBody = (appUserId: string, linkToken?: string) => ({
    appUserId,
    brandId: world.brands['public-v2'],
    redirectUri: APP_RETURN,
    ...(linkToken !== undefined && { linkToken }),
  });
  const userBucket = (res: { headers: Headers }) => /initiate";r=(\d+)/.exec(res.headers.get('ratelimit') ?? '')?.[1];
  const appUser = (id: string) =>
    world.api.request('GET', `/api/platform/v1/app-users/${id}`, { key: world.tenant.key });

  it('mints an opaque, single-use token for 30 minutes, shown once', async () => {
    const minted = await mint({ appUserId: 'lt-mint', appId: world.app.appId, redirectUri: APP_RETURN });
    expect(minted.status, minted.text).to.equal(201);
    expect(minted.body.linkToken).to.match(/^lt_[0-9A-Za-z]{40}$/);
    expect(Date.parse(minted.body.expiresAt) - clock.now().getTime()).to.equal(30 * 60_000);
    expect(minted.headers.get('cache-control')).to.equal('no-store');
    const stored = await world.api.mongo.db.collection('link_tokens').find({}).toArray();
    expect(JSON.stringify(stored)).to.not.include(minted.body.linkToken); // kept only as its hash
  });

  it('is the only way to start a sign-in: without a token, a spent one, or an expired one, nothing starts', async () => {
    const missing = await initiate(launchBody('lt-victim'));
    expect(missing.status).to.equal(400);
    expect(missing.body.details.errors[0]).to.include({ in: 'body', name: 'linkToken' });
    const made = await initiate(launchBody('lt-victim', 'lt_' + 'x'.repeat(40)));
    expect([made.status, made.body.code]).to.deep.equal([400, 'LINK_TOKEN_INVALID']);

    const token = await mintLinkToken(world, 'lt-victim');
    const first = await initiate(launchBody('lt-victim', token));
    expect(first.status, first.text).to.equal(201);
    expect(first.body.authorizeUrl).to.be.a('string');
    const again = await initiate(launchBody('lt-victim', token));
    expect([again.status, again.body.code]).to.deep.equal([400, 'LINK_TOKEN_INVALID']);

    const late = await mintLinkToken(world, 'lt-victim');
    clock.advance(30 * 60_000);
    const expired = await initiate(launchBody('lt-victim', late));
    expect([expired.status, expired.body.code]).to.deep.equal([400, 'LINK_TOKEN_INVALID']);
    expect(expired.body.detail).to.equal(again.body.detail); // unknown, used and expired look alike
  });

  it('refuses a token minted for another user, address, brand or app, and takes no rate-limit token', async () => {
    // The attacker's backend can mint for the attacker's own user only: naming the victim is a mismatch.
    const attackers = await mintLinkToken(world, 'lt-attacker');
    const before = await initiate(launchBody('lt-target', attackers));
    expect([before.status, before.body.code]).to.deep.equal([400, 'LINK_TOKEN_MISMATCH']);
    expect(before.body.details).to.deep.equal({ mismatched: ['appUserId'] });
    const after = await initiate(launchBody('lt-target', attackers));
    expect(userBucket(after)).to.equal(userBucket(before)).and.to.not.equal(undefined);

    const other = await initiate({ ...launchBody('lt-attacker', attackers), redirectUri: `${APP_RETURN}&x=1` });
    expect(other.body.details).to.deep.equal({ mismatched: ['redirectUri'] });
    const bound = await mintLinkToken(world, 'lt-attacker', { brandId: world.brands['secret'] });
    expect((await initiate(launchBody('lt-attacker', bound))).body.details).to.deep.equal({ mismatched: ['brandId'] });
    // Another app of the same account: its publishable key cannot use this app's token.
    const sibling = await world.api.admin('POST', `/customer-accounts/${world.tenant.accountId}/apps`, {
      name: 'Sibling',
      grants: {
        resourceTypes: ['Observation'],
        loincCodes: ['*'],
        confidentiality: ['N'],
        sensitivity: [],
        lookbackDays: null,
      },
      redirectUris: [APP_RETURN],
    });
    const crossed = await world.api.request('POST', '/api/sdk/v1/connect-sessions', {
      key: sibling.body.publishableKey,
      body: launchBody('lt-attacker', attackers),
    });
    expect(crossed.body.details).to.deep.equal({ mismatched: ['appId'] });
    // The mismatches spent nothing: the token still starts the session it was minted for.
    expect((await initiate(launchBody('lt-attacker', attackers))).status).to.equal(201);
  });

  it("answers another account's token, and another account's app, as unknown ones", async () => {
    const stranger = await world.api.tenant();
    const theirApp = await world.api.admin('POST', `/customer-accounts/${stranger.accountId}/apps`, {
      name: 'Stranger app',
      grants: {
        resourceTypes: ['Observation'],
        loincCodes: ['*'],
        confidentiality: ['N'],
        sensitivity: [],
        lookbackDays: null,
      },
      redirectUris: [APP_RETURN],
    });
    const theirs = await mint({ appUserId: 'lt-x', appId: theirApp.body.id, redirectUri: APP_RETURN }, stranger.key);
    expect(theirs.status).to.equal(201);
    const used = await initiate(launchBody('lt-x', theirs.body.linkToken));
    expect([used.status, used.body.code]).to.deep.equal([400, 'LINK_TOKEN_INVALID']);
    const foreignApp = await mint({ appUserId: 'lt-x', appId: theirApp.body.id, redirectUri: APP_RETURN });
    const unknownApp = await mint({ appUserId: 'lt-x', appId: randomUUID(), redirectUri: APP_RETURN });
    expect(foreignApp.status).to.equal(400);
    expect(foreignApp.body).to.deep.equal({ ...unknownApp.body, instance: foreignApp.body.instance });
  });

  it('checks what it binds when it mints', async () => {
    const base = { appUserId: 'lt-check', appId: world.app.appId, redirectUri: APP_RETURN };
    expect((await mint({ ...base, redirectUri: 'https://evil.example/' })).status).to.equal(400);
    expect((await mint({ ...base, brandId: 'b-not-in-the-catalog' })).status).to.equal(400);
    expect((await mint({ ...base, connectionId: randomUUID() })).status, 'a reconnect names its brand').to.equal(400);
    const nobody = await mint({ ...base, brandId: world.brands['public-v2'], connectionId: randomUUID() });
    expect(nobody.status).to.equal(400);
    expect((await mint({ ...base, extra: 1 })).status).to.equal(400);
    const readOnly = await world.api.keyFor(world.tenant.accountId, ['app_user:read']);
    expect((await mint(base, readOnly.key)).status).to.equal(403);
    await world.api.admin('PATCH', `/apps/${world.app.appId}`, { status: 'SUSPENDED' });
    try {
      expect((await mint(base)).status).to.equal(409);
    } finally {
      await world.api.admin('PATCH', `/apps/${world.app.appId}`, { status: 'ACTIVE' });
    }
  });

  it('is spent by exactly one of two initiates at once', async () => {
    const token = await mintLinkToken(world, 'lt-race');
    const answers = await Promise.all([initiate(launchBody('lt-race', token)), initiate(launchBody('lt-race', token))]);
    expect(answers.map((a) => a.status).sort()).to.deep.equal([201, 400]);
  });

  it('leaves the brand open when it names none (the app, or Portico Connect, chooses), and is not for backend sessions', async () => {
    const open = await mintLinkToken(world, 'lt-open');
    const picker = await initiate({ appUserId: 'lt-open', redirectUri: APP_RETURN, linkToken: open });
    expect(picker.status, picker.text).to.equal(201);
    expect(picker.body.brandId).to.equal(null);
    const chosen = await initiate(launchBody('lt-open', await mintLinkToken(world, 'lt-open')));
    expect(chosen.status).to.equal(201);
    const backend = await initiate({ appUserId: 'lt-open', brandId: world.brands['public-v2'], linkToken: open });
    expect(backend.status).to.equal(400);
    expect(backend.body.details.errors[0].name).to.equal('linkToken');
  });

  it('connects the user it was minted for, end to end', async () => {
    const { back } = await connectThroughBrowser(world, 'public-v2', 'lt-happy');
    expect(back.searchParams.get('status'), back.href).to.equal('connected');
    expect((await appUser('lt-happy')).body.state).to.equal('ACTIVE');
  });
});
