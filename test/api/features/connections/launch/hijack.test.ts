// Connections nobody can hijack (docs/connecting.md), against the sandbox EHR: the callback belongs to the browser
// that visited authorizeUrl; an answer must come from the authorization server the launch sent the patient to
// (RFC 9207 `iss`), so a mix-up between two brands redeems nothing; a vendor-wide registration only ever talks to
// the hosts it pins; the EHR's error words reach the app only when they are words; and whatever a failed sign-in
// obtained is deleted and revoked.
import { expect } from 'chai';
import { ShiftedClock } from '../../../../../testkit/clock.js';
import { signIn } from '../../../../../testkit/sandbox-ehr.js';
import {
  APP_RETURN,
  connectThroughBrowser,
  CookieJar,
  initiateLaunch,
  mintLinkToken,
  startSmartWorld,
  throughConsent,
  until,
  visit,
  type SmartWorld,
} from '../../../../../testkit/smart.js';

describe('connections nobody can hijack (sandbox EHR)', function () {
  this.timeout(60_000);
  let world: SmartWorld;
  // Discovery is kept an hour: a test that changes what discovery says moves past that first.
  const clock = new ShiftedClock();
  before(async () => {
    world = await startSmartWorld({ clock, env: { PORTICO_SYNC_INTERVAL: '1000h' } });
  });
  after(() => world?.close());
  afterEach(() => {
    Object.assign(world.ehr.switches, { iss: 'right', advertiseIss: true, endpointHostnames: {} });
  });
  const freshDiscovery = () => clock.advance(61 * 60_000);

  const appUser = (id: string) =>
    world.api.request('GET', `/api/platform/v1/app-users/${id}`, { key: world.tenant.key });
  const sessionOf = (id: string) => world.api.mongo.db.collection('connect_sessions').findOne({ _id: id as never });
  const bindingCookies = (setCookie: string[]) => setCookie.filter((line) => /^(__Host-)?portico-connect=/.test(line));
  /** Visits authorizeUrl in `browser`, and continues on the consent page: the session, and the EHR's sign-in URL the browser was sent to. */
  const launch = async (brandKey: string, appUserId: string, browser: CookieJar) => {
    const { id, authorizeUrl } = await initiateLaunch(world, brandKey, appUserId);
    const launched = await throughConsent(authorizeUrl, browser);
    expect(launched.status, launched.text).to.equal(302);
    return { id, signInUrl: launched.location!.href, setCookie: bindingCookies(launched.setCookie) };
  };

  describe('the callback belongs to the browser that started it', () => {
    it('binds the sign-in with an HttpOnly, SameSite=Lax cookie living no longer than the session', async () => {
      const { id, setCookie } = await launch('public-v2', 'bind-cookie', new CookieJar());
      expect(setCookie).to.have.length(1);
      const [pair, ...attributes] = setCookie[0]!.split('; ');
      expect(pair).to.match(new RegExp(`^portico-connect=${id}\\.[A-Za-z0-9_-]{43}$`));
      expect(attributes.slice(2)).to.deep.equal(['HttpOnly', 'SameSite=Lax']); // plain http here: no Secure
      expect(attributes[0]).to.match(/^Path=\/$/);
      const maxAge = Number(/Max-Age=(\d+)/.exec(setCookie[0]!)![1]);
      expect(maxAge).to.be.within(1, 1800);
    });

    it('is __Host- and Secure where the browser reaches Portico over https', async () => {
      const https = await world.replica({ env: { PUBLIC_BASE_URL: 'https://portico.example.test' } });
      const linkToken = await mintLinkToken(world, 'bind-https', { brandId: world.brands['public-v2'] });
      const started = await https.request('POST', '/api/sdk/v1/connect-sessions', {
        key: world.app.pk,
        body: { appUserId: 'bind-https', brandId: world.brands['public-v2'], redirectUri: APP_RETURN, linkToken },
      });
      expect(started.status, started.text).to.equal(201);
      const { pathname } = new URL(started.body.authorizeUrl);
      const launched = await throughConsent(`${https.url}${pathname}`, new CookieJar());
      expect(launched.status).to.equal(302);
      expect(launched.setCookie).to.include(
        '__Host-portico-consent=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax; Secure',
      );
      expect(bindingCookies(launched.setCookie)[0]).to.match(
        /^__Host-portico-connect=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax; Secure$/,
      );
    });

    it('refuses a copied authorization link signed in from another browser, and connects nothing', async () => {
      // The attacker starts a sign-in for their own app user and copies where Portico sent their browser.
      const attacker = new CookieJar();
      const { id, signInUrl } = await launch('public-v2', 'hijack-attacker', attacker);
      // The victim opens it in their own browser, signs in at their health system and allows.
      const victim = new CookieJar();
      const callback = await signIn(signInUrl, { username: 'grace' });
      const landed = await visit(callback.href, victim);
      expect(landed.status).to.equal(400);
      expect(landed.text).to.include('Finish in the browser you started in');
      const user = await appUser('hijack-attacker');
      expect(user.body.state).to.equal('LIMITED');
      expect(user.body.connections).to.deep.equal([]);
      expect((await sessionOf(id))?.status).to.equal('LAUNCHED'); // nothing changed
      const tokens = await world.api.mongo.db.collection('connection_tokens').countDocuments({});
      // A made-up binding does no better than none.
      const forged = await fetch(callback.href, {
        redirect: 'manual',
        headers: { cookie: `portico-connect=${id}.${'A'.repeat(43)}` },
      });
      expect(forged.status).to.equal(400);
      // The browser that started it still finishes its own sign-in (until the session expires).
      const own = await visit((await signIn(signInUrl, { username: 'ada' })).href, attacker);
      expect(own.status).to.equal(303);
      expect(own.location!.searchParams.get('status')).to.equal('connected');
      expect((await appUser('hijack-attacker')).body.connections[0].patient).to.equal('ada');
      expect(await world.api.mongo.db.collection('connection_tokens').countDocuments({})).to.equal(tokens + 1);
      // Back at the app, the sign-in's entry leaves the cookie.
      expect(attacker.header(world.api.url)).to.equal(undefined);
    });

    it('keeps two sign-ins of one browser apart', async () => {
      const browser = new CookieJar();
      const one = await launch('public-v2', 'bind-tab-1', browser);
      const two = await launch('public-v1', 'bind-tab-2', browser);
      for (const [{ signInUrl }, user] of [
        [one, 'bind-tab-1'],
        [two, 'bind-tab-2'],
      ] as const) {
        const back = await visit((await signIn(signInUrl)).href, browser);
        expect(back.location!.searchParams.get('status'), user).to.equal('connected');
      }
    });
  });

  describe('RFC 9207: the answer comes from the server the patient was sent to', () => {
    for (const [label, iss, advertise, outcome] of [
      ['a wrong iss from a server that promises it', 'wrong', true, 'issuer_mismatch'],
      ['no iss from a server that promises it', 'absent', true, 'issuer_mismatch'],
      ['a wrong iss from a server that does not promise it', 'wrong', false, 'issuer_mismatch'],
      ['no iss from a server that does not promise it', 'absent', false, 'connected'],
      ['the right iss', 'right', true, 'connected'],
    ] as const) {
      it(`${outcome === 'connected' ? 'accepts' : 'refuses'} ${label}`, async () => {
        freshDiscovery();
        Object.assign(world.ehr.switches, { iss, advertiseIss: advertise });
        const exchanges = world.ehr.stats.tokenRequests.authorization_code;
        const user = `iss-${iss}-${advertise}`;
        const { back } = await connectThroughBrowser(world, 'public-v2', user);
        if (outcome === 'connected') {
          expect(back.searchParams.get('status'), back.href).to.equal('connected');
          return;
        }
        expect(Object.fromEntries(back.searchParams)).to.deep.include({ status: 'failed', error: 'issuer_mismatch' });
        expect(world.ehr.stats.tokenRequests.authorization_code, 'the code went nowhere').to.equal(exchanges);
        expect((await appUser(user)).body.connections).to.deep.equal([]);
      });
    }

    it('defeats a mix-up: a code from another health system is never redeemed at the brand the session is for', async () => {
      freshDiscovery();
      // Two brands share one vendor-wide client. The session is for 'public-v1'; the server it sends the patient to
      // passes them on to 'public-v2' with Portico's own request, as an attacker's server would.
      const browser = new CookieJar();
      const { id, signInUrl } = await launch('public-v1', 'mixup-victim', browser);
      const mixed = new URL(signInUrl.replace('/oauth/public-v1/', '/oauth/public-v2/'));
      mixed.searchParams.set('aud', world.ehr.fhirBaseUrl('public-v2'));
      const exchanges = world.ehr.stats.tokenRequests.authorization_code;
      const callback = await signIn(mixed.href);
      expect(callback.searchParams.get('code')).to.be.a('string');
      expect(callback.searchParams.get('iss')).to.equal(`${world.ehr.origin}/oauth/public-v2`);
      const back = await visit(callback.href, browser);
      expect(back.location!.searchParams.get('error')).to.equal('issuer_mismatch');
      expect(world.ehr.stats.tokenRequests.authorization_code).to.equal(exchanges);
      expect((await sessionOf(id))?.status).to.equal('FAILED');
      expect((await appUser('mixup-victim')).body.connections).to.deep.equal([]);
    });
  });

  describe('a vendor-wide registration talks only to the hosts it pins', () => {
    it('does not lead to a brand whose endpoints are elsewhere (409 at initiate, brand_unavailable at launch)', async () => {
      freshDiscovery();
      world.ehr.switches.endpointHostnames = { 'jwt-rs': 'localhost' }; // not on the registration's 127.0.0.1
      const linkToken = await mintLinkToken(world, 'pin-1', { brandId: world.brands['jwt-rs'] });
      const refused = await world.api.request('POST', '/api/sdk/v1/connect-sessions', {
        key: world.app.pk,
        body: { appUserId: 'pin-1', brandId: world.brands['jwt-rs'], redirectUri: APP_RETURN, linkToken },
      });
      expect([refused.status, refused.body.code]).to.deep.equal([409, 'BRAND_NOT_CONNECTABLE']);
      // Endpoints that move after the initiate: the launch, which discovers again, leads nowhere. (Discovery is kept
      // an hour and a session lives half of one: the initiate finds it 45 minutes old, the launch past the hour.)
      freshDiscovery();
      world.ehr.switches.endpointHostnames = {};
      await initiateLaunch(world, 'jwt-rs', 'pin-2');
      clock.advance(45 * 60_000);
      world.ehr.switches.endpointHostnames = { 'jwt-rs': 'localhost' };
      const { authorizeUrl } = await initiateLaunch(world, 'jwt-rs', 'pin-3');
      clock.advance(16 * 60_000);
      const launched = await throughConsent(authorizeUrl, new CookieJar());
      expect(launched.status).to.equal(303);
      expect(launched.location!.searchParams.get('error')).to.equal('brand_unavailable');
    });

    it('sends no refresh, and so no client credential, to a token endpoint that moved off the pinned hosts', async () => {
      freshDiscovery();
      const { back } = await connectThroughBrowser(world, 'secret', 'pin-refresh');
      const connectionId = back.searchParams.get('connectionId')!;
      await waitForSync('pin-refresh', (sync) => sync.lastSyncedAt !== null);
      freshDiscovery();
      world.ehr.switches.endpointHostnames = { secret: 'localhost' };
      world.ehr.switches.expireAccessTokens();
      const stored = () => world.api.mongo.db.collection('connection_tokens').findOne({ _id: connectionId as never });
      const before = await stored();
      const refreshes = world.ehr.stats.tokenRequests.refresh_token;
      clock.advance(61_000);
      await world.api.request('POST', `/api/platform/v1/connections/${connectionId}/sync`, { key: world.tenant.key });
      const failed = await waitForSync('pin-refresh', (sync) => sync.status === 'FAILED');
      expect(failed.lastError).to.equal('token_refresh_failed');
      // The refresh token was never presented: the tokens are as they were (a refresh rotates them).
      expect((await stored())?.['version']).to.equal(before?.['version']);
      expect(world.ehr.stats.tokenRequests.refresh_token, 'no refresh reached any token endpoint').to.equal(refreshes);
    });
  });

  const waitForSync = async (appUserId: string, done: (sync: any) => boolean) =>
    (
      await until(
        `the sync of ${appUserId}`,
        () => appUser(appUserId),
        (res) => {
          const sync = res.body.connections[0]?.sync;
          return sync !== undefined && sync.status !== 'RUNNING' && done(sync);
        },
      )
    ).body.connections[0].sync;

  it("passes the EHR's error to the app only when it is a word", async () => {
    for (const [given, passed] of [
      ['temporarily_unavailable', 'temporarily_unavailable'],
      ['<img src=x onerror=alert(1)>', 'invalid_request'],
      ['Access_Denied', 'invalid_request'],
      ['x'.repeat(65), 'invalid_request'],
    ] as const) {
      const browser = new CookieJar();
      const { signInUrl } = await launch('public-v2', `err-${passed}-${given.length}`, browser);
      const state = new URL(signInUrl).searchParams.get('state')!;
      const callback = new URL(`${world.api.url}/api/sdk/v1/connect/callback`);
      callback.searchParams.set('state', state);
      callback.searchParams.set('error', given);
      callback.searchParams.set('iss', `${world.ehr.origin}/oauth/public-v2`);
      const back = await visit(callback.href, browser);
      expect(back.location!.searchParams.get('error'), given).to.equal(passed);
    }
  });

  it('deletes and revokes what a sign-in got when the app user may no longer connect', async () => {
    const browser = new CookieJar();
    const { signInUrl } = await launch('public-v2', 'forget-refused', browser);
    const callback = await signIn(signInUrl);
    await world.api.request('DELETE', '/api/platform/v1/app-users/forget-refused', { key: world.tenant.key });
    const revocations = world.ehr.stats.revocations;
    const tokens = await world.api.mongo.db.collection('connection_tokens').countDocuments({});
    const back = await visit(callback.href, browser);
    expect(back.location!.searchParams.get('error')).to.equal('connection_refused');
    expect(await world.api.mongo.db.collection('connection_tokens').countDocuments({})).to.equal(tokens);
    await world.api.services.connections.vault.settled();
    expect(world.ehr.stats.revocations).to.equal(revocations + 1);
  });
});
