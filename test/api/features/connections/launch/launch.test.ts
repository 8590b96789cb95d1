// A patient's sign-in at their health system, end to end against the sandbox EHR (docs/connecting.md): initiate
// with a redirect URI, the authorizeUrl, the EHR's sign-in, the callback, and the connection it makes.
import { expect } from 'chai';
import { eventsOf } from '../../../../../testkit/events.js';
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

describe('connecting through SMART App Launch (sandbox EHR)', function () {
  this.timeout(60_000);
  let world: SmartWorld;
  before(async () => {
    world = await startSmartWorld();
  });
  after(() => world?.close());

  const appUser = (id: string) =>
    world.api.request('GET', `/api/platform/v1/app-users/${id}`, { key: world.tenant.key });

  it('leads the patient to the EHR with PKCE, aud, state and v2 scopes, and back to the app connected', async () => {
    const { id, authorizeUrl } = await initiateLaunch(world, 'public-v2', 'launch-happy');
    expect(authorizeUrl).to.match(new RegExp(`^${world.api.url}/api/sdk/v1/connect/launch/`));
    const browser = new CookieJar();
    const launched = await throughConsent(authorizeUrl, browser);
    expect(launched.status).to.equal(302);
    expect(launched.setCookie.join('\n')).to.match(/portico-consent=; Path=\/; Max-Age=0/);
    const to = launched.location!;
    expect(to.origin + to.pathname).to.equal(`${world.ehr.origin}/oauth/public-v2/authorize`);
    const q = to.searchParams;
    expect(q.get('response_type')).to.equal('code');
    expect(q.get('client_id')).to.equal('portico-public');
    expect(q.get('redirect_uri')).to.equal(`${world.api.url}/api/sdk/v1/connect/callback`);
    expect(q.get('scope')).to.equal('launch/patient offline_access patient/Patient.rs patient/Observation.rs');
    expect(q.get('aud')).to.equal(world.ehr.fhirBaseUrl('public-v2'));
    expect(q.get('code_challenge_method')).to.equal('S256');
    expect(q.get('code_challenge')).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(q.get('state')!.split('.')[1]!, 'base64url')).to.have.length.at.least(16);

    const callback = await signIn(to.href);
    expect(callback.origin + callback.pathname).to.equal(`${world.api.url}/api/sdk/v1/connect/callback`);
    expect(callback.searchParams.get('iss')).to.equal(`${world.ehr.origin}/oauth/public-v2`);
    const back = await visit(callback.href, browser);
    expect(back.status).to.equal(303);
    const returned = back.location!;
    expect(returned.origin + returned.pathname).to.equal('https://app.example.com/connected');
    expect(returned.searchParams.get('from')).to.equal('portico'); // the app's own parameter is kept
    expect(returned.searchParams.get('session')).to.equal(id);
    expect(returned.searchParams.get('status')).to.equal('connected');
    const connectionId = returned.searchParams.get('connectionId')!;

    const user = await appUser('launch-happy');
    expect(user.body.state).to.equal('ACTIVE');
    expect(user.body.connections).to.have.length(1);
    expect(user.body.connections[0]).to.include({
      id: connectionId,
      status: 'ACTIVE',
      fhirBaseUrl: world.ehr.fhirBaseUrl('public-v2'),
      patient: 'ada',
    });
    expect(user.body.connections[0].scope).to.include('patient/Observation.rs');
    const types = (await eventsOf(world.api.mongo.db, world.tenant.accountId)).map((e) => e.type);
    expect(types).to.include.members(['app_user.limited', 'connection.created', 'app_user.activated']);

    // The first sync starts by itself and brings every observation the EHR holds for the patient.
    const synced = await until(
      'the first sync',
      () => appUser('launch-happy'),
      (res) => res.body.connections[0]?.sync?.status === 'IDLE' && res.body.connections[0].sync.lastSyncedAt !== null,
    );
    expect(synced.body.connections[0].sync).to.include({ observations: 230, lastError: null });
    const search = await world.api.request(
      'GET',
      `/api/sdk/v1/fhir/connections/${connectionId}/Observation?_count=100`,
      {
        key: world.app.ak,
      },
    );
    expect(search.status, search.text).to.equal(200);
    expect(search.body.total).to.equal(230);
  });

  it('asks a v1-only server for v1 scopes', async () => {
    const { authorizeUrl } = await initiateLaunch(world, 'public-v1', 'launch-v1');
    const browser = new CookieJar();
    const launched = await throughConsent(authorizeUrl, browser);
    expect(launched.location!.searchParams.get('scope')).to.equal(
      'launch/patient offline_access patient/Patient.read patient/Observation.read',
    );
    const back = await visit((await signIn(launched.location!.href)).href, browser);
    expect(back.location!.searchParams.get('status')).to.equal('connected');
  });

  for (const [brand, method] of [
    ['secret', 'client_secret_basic'],
    ['jwt-es', 'private_key_jwt'],
    ['jwt-rs', 'private_key_jwt'],
  ] as const) {
    it(`authenticates at the token endpoint with ${method} (${brand})`, async () => {
      const { back } = await connectThroughBrowser(world, brand, `launch-${brand}`, { username: 'grace' });
      expect(back.searchParams.get('status'), back.href).to.equal('connected');
      expect(world.ehr.stats.lastTokenRequest).to.deep.include({
        grantType: 'authorization_code',
        clientAuthMethod: method,
      });
    });
  }

  it('starts one sign-in per authorizeUrl: a second visit returns session_used', async () => {
    const { id, authorizeUrl } = await initiateLaunch(world, 'public-v2', 'launch-twice');
    const browser = new CookieJar();
    expect((await throughConsent(authorizeUrl, browser)).status).to.equal(302);
    const again = await visit(authorizeUrl, browser);
    expect(again.status).to.equal(303);
    expect(Object.fromEntries(again.location!.searchParams)).to.deep.equal({
      from: 'portico',
      session: id,
      status: 'failed',
      error: 'session_used',
    });
  });

  it('refuses a forged or replayed state with a page, changing nothing', async () => {
    const forged = await visit(`${world.api.url}/api/sdk/v1/connect/callback?code=x&state=nothing`);
    expect(forged.status).to.equal(400);
    expect(forged.text).to.include('cannot be finished');
    const { callback, back } = await connectThroughBrowser(world, 'public-v2', 'launch-replay');
    expect(back.searchParams.get('status')).to.equal('connected');
    const replay = await visit(callback.href); // (whatever the browser: the state is spent)
    expect(replay.status).to.equal(400);
    expect((await appUser('launch-replay')).body.connections).to.have.length(1);
  });

  it('exchanges a code once when the callback arrives three times at once', async () => {
    const { authorizeUrl } = await initiateLaunch(world, 'public-v2', 'launch-race');
    const browser = new CookieJar();
    const callback = await signIn((await throughConsent(authorizeUrl, browser)).location!.href);
    const exchanges = world.ehr.stats.tokenRequests.authorization_code;
    // The same browser, three times at once (each reads the cookie before any answer changes it).
    const answers = await Promise.all([1, 2, 3].map(() => visit(callback.href, browser)));
    expect(answers.map((a) => a.status).sort()).to.deep.equal([303, 400, 400]);
    expect(world.ehr.stats.tokenRequests.authorization_code).to.equal(exchanges + 1);
    expect((await appUser('launch-race')).body.connections).to.have.length(1);
  });

  it("returns the EHR's own error when the patient denies access, and connects nothing", async () => {
    const { back } = await connectThroughBrowser(world, 'public-v2', 'launch-deny', { decision: 'deny' });
    expect(back.searchParams.get('status')).to.equal('failed');
    expect(back.searchParams.get('error')).to.equal('access_denied');
    const user = await appUser('launch-deny');
    expect(user.body).to.include({ state: 'LIMITED' });
    expect(user.body.connections).to.deep.equal([]);
  });

  for (const [label, response, error] of [
    ['no patient', { omit: ['patient'] }, 'invalid_token_response'],
    ['no access token', { omit: ['access_token'] }, 'invalid_token_response'],
    ['a token type other than Bearer', { tokenType: 'mac' }, 'invalid_token_response'],
  ] as const) {
    it(`fails a token response with ${label} (${error}), connecting nothing`, async () => {
      world.ehr.switches.tokenResponse = { ...response } as never;
      try {
        const { back } = await connectThroughBrowser(world, 'public-v2', `launch-bad-${error}-${label.length}`);
        expect(back.searchParams.get('status')).to.equal('failed');
        expect(back.searchParams.get('error')).to.equal(error);
      } finally {
        world.ehr.switches.tokenResponse = null;
      }
      expect((await appUser(`launch-bad-${error}-${label.length}`)).body.connections).to.deep.equal([]);
    });
  }

  it("returns the token endpoint's refusal (invalid_client) when it refuses the client", async () => {
    world.ehr.switches.failNext('token', 401);
    const { back } = await connectThroughBrowser(world, 'secret', 'launch-invalid-client');
    expect(back.searchParams.get('error')).to.equal('invalid_client');
  });

  it('leads no patient anywhere for an app suspended after the initiate (app_suspended)', async () => {
    const { authorizeUrl } = await initiateLaunch(world, 'public-v2', 'launch-suspended');
    expect((await world.api.admin('PATCH', `/apps/${world.app.appId}`, { status: 'SUSPENDED' })).status).to.equal(200);
    try {
      const launched = await visit(authorizeUrl);
      expect(launched.status).to.equal(303);
      expect(launched.location!.searchParams.get('error')).to.equal('app_suspended');
    } finally {
      await world.api.admin('PATCH', `/apps/${world.app.appId}`, { status: 'ACTIVE' });
    }
  });

  it('checks the redirect URI and the brand before it takes a token', async () => {
    const initiate = (body: Record<string, unknown>) =>
      world.api.request('POST', '/api/sdk/v1/connect-sessions', { key: world.app.pk, body });
    const linkToken = await mintLinkToken(world, 'u-check');
    const wrong = await initiate({
      appUserId: 'u-check',
      brandId: world.brands['public-v2'],
      redirectUri: 'https://evil.example/',
      linkToken,
    });
    expect(wrong.status).to.equal(400);
    expect(wrong.body.code).to.equal('LINK_TOKEN_MISMATCH');
    expect(wrong.body.details.mismatched).to.deep.equal(['redirectUri']);
    const plain = await initiate({ appUserId: 'u-check', brandId: world.brands['public-v2'] });
    expect(plain.status).to.equal(201);
    expect(plain.body).to.not.have.property('authorizeUrl');
    // A brand no registration matches: 409, and no token is taken (the buckets show the same before and after).
    const stranger = {
      appUserId: 'u-check',
      brandId: world.brands['unregistered'],
      redirectUri: APP_RETURN,
      linkToken,
    };
    const refused = await initiate(stranger);
    expect(refused.status, refused.text).to.equal(409);
    expect(refused.body.code).to.equal('BRAND_NOT_CONNECTABLE');
    const remaining = (res: { headers: Headers }) =>
      [...(res.headers.get('ratelimit') ?? '').matchAll(/r=(\d+)|remaining=(\d+)/g)].map((m) => m[1] ?? m[2]);
    expect(remaining(refused)).to.have.length.greaterThan(0);
    expect(remaining(await initiate(stranger))).to.deep.equal(remaining(refused));
    // Without a redirect URI the same brand is fine: the backend completes the session.
    expect((await initiate({ appUserId: 'u-check', brandId: world.brands['unregistered'] })).status).to.equal(201);
  });

  it("keeps the app's redirect URIs to https (or http on this machine), without fragments, at most 10", async () => {
    const patch = (redirectUris: string[]) => world.api.admin('PATCH', `/apps/${world.app.appId}`, { redirectUris });
    for (const bad of [
      ['http://app.example.com/back'],
      ['https://app.example.com/back#frag'],
      ['https://user:pw@app.example.com/back'],
      ['not a url'],
      Array.from({ length: 11 }, (_, i) => `https://app.example.com/${i}`),
    ])
      expect((await patch(bad)).status, bad.join(' ')).to.equal(400);
    const ok = await patch([APP_RETURN, 'http://localhost:3000/back', 'http://127.0.0.1:9/x']);
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.body.redirectUris).to.have.length(3);
    await patch([APP_RETURN]);
  });
});

describe('Portico Connect: sessions without a brand (sandbox EHR)', function () {
  this.timeout(60_000);
  let world: SmartWorld;
  before(async () => {
    world = await startSmartWorld();
  });
  after(() => world?.close());

  const initiate = (body: Record<string, unknown>) =>
    world.api.request('POST', '/api/sdk/v1/connect-sessions', { key: world.app.pk, body });

  it('opens the picker until the patient chooses, and the choice leads to the EHR; complete refuses it meanwhile', async () => {
    expect((await initiate({ appUserId: 'picker-none' })).status).to.equal(400); // neither brandId nor redirectUri
    const linkToken = await mintLinkToken(world, 'picker-1');
    const started = await initiate({ appUserId: 'picker-1', redirectUri: APP_RETURN, linkToken });
    expect(started.status, started.text).to.equal(201);
    expect(started.body.brandId).to.equal(null);
    for (let visit = 0; visit < 2; visit++) {
      const picker = await fetch(started.body.authorizeUrl);
      expect(picker.status).to.equal(200);
      expect(picker.headers.get('content-security-policy')).to.include("script-src 'self'");
      expect(await picker.text()).to.include('Search for your health system');
    }
    const completed = await world.api.request('POST', `/api/platform/v1/connect-sessions/${started.body.id}/complete`, {
      key: world.tenant.key,
    });
    expect(completed.status).to.equal(409);
    const browser = new CookieJar();
    const chosen = await throughConsent(`${started.body.authorizeUrl}?brand=${world.brands['public-v2']}`, browser);
    expect(chosen.status).to.equal(302);
    expect(chosen.location!.href).to.include(`${world.ehr.origin}/oauth/public-v2/authorize`);
    // Signing in ends on the end page, whose link returns to the app with the outcome.
    const callback = (await signIn(chosen.location!.href)).href;
    const end = await fetch(callback, { headers: { cookie: browser.header(callback)! } });
    expect(end.status).to.equal(200);
    const html = await end.text();
    expect(html).to.include('Connected to Sandbox Public Health');
    const back = new URL(/href="([^"]+)"/.exec(html.slice(html.indexOf('id="return"')))![1]!.replaceAll('&#38;', '&'));
    expect(back.searchParams.get('status')).to.equal('connected');
    expect(back.searchParams.get('session')).to.equal(started.body.id);
  });

  it("serves the picker's script and stylesheet, and nothing else", async () => {
    const script = await fetch(`${world.api.url}/api/sdk/v1/connect/assets/picker.js`);
    expect(script.status).to.equal(200);
    expect(script.headers.get('content-type')).to.match(/^text\/javascript/);
    const again = await fetch(`${world.api.url}/api/sdk/v1/connect/assets/picker.js`, {
      headers: { 'if-none-match': script.headers.get('etag')! },
    });
    expect(again.status).to.equal(304);
    expect((await fetch(`${world.api.url}/api/sdk/v1/connect/assets/connect.css`)).status).to.equal(200);
    expect((await fetch(`${world.api.url}/api/sdk/v1/connect/assets/..%2Fpackage.json`)).status).to.equal(404);
  });
});
