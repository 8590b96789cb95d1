// The sandbox's failure switches, each shown to do what a Portico test will rely on it for.
import { expect } from 'chai';
import * as oauth from 'oauth4webapi';
import { validateBundle } from '../../api/src/features/clinical/ingest/observations.js';
import { startSandboxEhr, type SandboxEhr } from '../../sandbox/src/server.js';
import {
  authorizeUrl,
  connectPublicClient,
  fhirGet,
  getJson,
  pkce,
  postForm,
  signIn,
} from '../../testkit/sandbox-ehr.js';

const APP = { clientId: 'test-app', redirectUri: 'http://127.0.0.1:9/callback' };

describe('sandbox EHR: failure switches', () => {
  let ehr: SandboxEhr;
  let clock: number;

  beforeEach(async () => {
    clock = Date.parse('2030-06-01T12:00:00Z');
    ehr = await startSandboxEhr({
      clients: [{ clientId: APP.clientId, redirectUris: [APP.redirectUri], auth: { method: 'none' } }],
      now: () => clock,
    });
  });
  afterEach(() => ehr.close());
  const connect = () => connectPublicClient(ehr, { brandKey: 'sandbox-health', ...APP });
  const refresh = (refreshToken: string) =>
    postForm(`${ehr.origin}/oauth/sandbox-health/token`, {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: APP.clientId,
    });
  const search = (accessToken: string, query = '') =>
    fhirGet(`${ehr.fhirBaseUrl('sandbox-health')}/Observation?patient=ada${query}`, accessToken);
  const resources = async (accessToken: string, query: string) =>
    (await search(accessToken, query)).body.entry.map((entry: any) => entry.resource);
  const discover = (brandKey = 'sandbox-health') =>
    getJson(`${ehr.fhirBaseUrl(brandKey)}/.well-known/smart-configuration`);
  /** Where the EHR sends the browser back to the app after sign-in (or straight away, for a refused request). */
  const authorizationResponse = (params: Record<string, string | undefined> = {}) =>
    signIn(
      authorizeUrl(
        ehr,
        'sandbox-health',
        { client_id: APP.clientId, redirect_uri: APP.redirectUri, ...params },
        pkce().challenge,
      ),
    );

  it('failNext answers the planned status the planned number of times, with Retry-After', async () => {
    const { body } = await connect();
    ehr.switches.failNext('fhir', 429, 2, 7);
    for (let i = 0; i < 2; i++) {
      const failed = await search(body.access_token);
      expect([failed.status, failed.headers.get('retry-after')]).to.deep.equal([429, '7']);
    }
    expect((await search(body.access_token)).status).to.equal(200);
    expect(ehr.stats.fhirRequests).to.equal(3);

    ehr.switches.failNext('token', 503, 1, 2);
    const failedToken = await refresh(body.refresh_token);
    expect([failedToken.status, failedToken.headers.get('retry-after'), failedToken.body.error]).to.deep.equal([
      503,
      '2',
      'temporarily_unavailable',
    ]);
    ehr.switches.failNext('token', 401);
    expect((await refresh(body.refresh_token)).body.error).to.equal('invalid_client');
    expect((await refresh(body.refresh_token)).status, 'the planned failures did not spend the token').to.equal(200);

    ehr.switches.failNext('smart-configuration', 500);
    const config = `${ehr.fhirBaseUrl('sandbox-health')}/.well-known/smart-configuration`;
    expect((await fetch(config)).status).to.equal(500);
    expect((await fetch(config)).status).to.equal(200);
  });

  it('expireAccessTokens makes every token issued so far answer 401 until refreshed', async () => {
    const { body } = await connect();
    ehr.switches.expireAccessTokens();
    const expired = await search(body.access_token);
    expect([expired.status, expired.headers.get('www-authenticate')]).to.deep.equal([
      401,
      'Bearer error="invalid_token"',
    ]);
    const renewed = await refresh(body.refresh_token);
    expect((await search(renewed.body.access_token)).status).to.equal(200);
  });

  it('holdRefresh keeps a refresh in flight until released', async () => {
    const { body } = await connect();
    const release = ehr.switches.holdRefresh();
    let settled = false;
    const pending = refresh(body.refresh_token).finally(() => (settled = true));
    while (ehr.stats.tokenRequests.refresh_token === 0) await new Promise((resolve) => setImmediate(resolve));
    await search(body.access_token); // a full round trip while the refresh waits
    expect(settled).to.equal(false);
    release();
    expect((await pending).status).to.equal(200);
  });

  it('foreignNextOrigin rewrites next links to another origin', async () => {
    const { body } = await connect();
    ehr.switches.foreignNextOrigin = 'http://127.0.0.2:1';
    const next = (await search(body.access_token, '&_count=10')).body.link.find((l: any) => l.relation === 'next');
    expect(new URL(next.url).origin).to.equal('http://127.0.0.2:1');
  });

  it('invalidEvery makes every k-th observation fail ingest validation', async () => {
    const { body } = await connect();
    ehr.switches.invalidEvery = 10;
    const page = (await search(body.access_token, '&_count=100')).body;
    const result = validateBundle(page);
    expect(result.ok).to.equal(false);
    const broken = result.ok ? [] : [...new Set(result.problems.map((p) => p.index))];
    expect(broken).to.have.length(10);
    expect(page.entry[9].resource.code).to.equal(undefined);
  });

  it('tokenResponse drops fields or changes token_type; rotateRefreshTokens=false keeps the refresh token', async () => {
    ehr.switches.tokenResponse = { omit: ['patient'] };
    expect((await connect()).body)
      .to.have.property('access_token')
      .and.not.have.property('patient');
    ehr.switches.tokenResponse = { tokenType: 'mac' };
    expect((await connect()).body.token_type).to.equal('mac');
    ehr.switches.tokenResponse = { omit: ['access_token', 'refresh_token'] };
    expect((await connect()).body).to.not.have.any.keys('access_token', 'refresh_token');
    ehr.switches.tokenResponse = null;
    ehr.switches.rotateRefreshTokens = false;
    const { body } = await connect();
    const again = await refresh(body.refresh_token);
    expect(again.body.refresh_token).to.equal(body.refresh_token);
    expect((await refresh(body.refresh_token)).status).to.equal(200);
  });

  it('denyAll turns every Allow into access_denied', async () => {
    ehr.switches.denyAll = true;
    const back = await authorizationResponse({ state: 'x' });
    expect(Object.fromEntries(back.searchParams)).to.deep.equal({
      error: 'access_denied',
      state: 'x',
      iss: `${ehr.origin}/oauth/sandbox-health`,
    });
  });

  it('iss names the issuer on each authorization response, or another, or none; advertiseIss announces it', async () => {
    const discovered = await discover();
    expect(discovered.authorization_response_iss_parameter_supported).to.equal(true);
    const validate = (server: any, back: URL) =>
      oauth.validateAuthResponse(server, { client_id: APP.clientId }, back, back.searchParams.get('state')!);
    const granted = await authorizationResponse();
    expect(granted.searchParams.get('iss')).to.equal(discovered.issuer);
    expect(() => validate(discovered, granted), 'a real client accepts it').to.not.throw();
    const refused = await authorizationResponse({ code_challenge_method: 'plain' });
    expect(refused.searchParams.get('error')).to.equal('invalid_request');
    expect(refused.searchParams.get('iss')).to.equal(discovered.issuer);

    ehr.switches.iss = 'wrong';
    const mixedUp = await authorizationResponse();
    const wrongIssuer = new URL(mixedUp.searchParams.get('iss')!);
    expect([wrongIssuer.origin, wrongIssuer.href]).to.deep.equal([ehr.origin, `${ehr.origin}/oauth/no-such-brand`]);
    expect(() => validate(discovered, mixedUp)).to.throw(/unexpected "iss"/);

    ehr.switches.iss = 'absent';
    const unnamed = await authorizationResponse();
    expect(unnamed.searchParams.has('iss')).to.equal(false);
    expect(unnamed.searchParams.get('code')).to.be.a('string');
    expect(() => validate(discovered, unnamed), 'advertised, then missing').to.throw(/"iss" \(issuer\) missing/);
    ehr.switches.advertiseIss = false;
    const quiet = await discover();
    expect(quiet).to.not.have.property('authorization_response_iss_parameter_supported');
    expect(() => validate(quiet, unnamed), 'an EHR without RFC 9207').to.not.throw();
  });

  it('refreshPatient makes a refresh name another patient; the tokens still read the grant’s only', async () => {
    ehr.switches.refreshPatient = 'grace';
    const { body } = await connect();
    expect(body.patient, 'the code exchange names the grant’s patient').to.equal('ada');
    const refreshed = await refresh(body.refresh_token);
    expect(refreshed.body.patient).to.equal('grace');
    const base = ehr.fhirBaseUrl('sandbox-health');
    expect((await fhirGet(`${base}/Patient/grace`, refreshed.body.access_token)).status).to.equal(403);
    expect((await fhirGet(`${base}/Patient/ada`, refreshed.body.access_token)).status).to.equal(200);
  });

  it('foreignPatientEvery makes every k-th observation another patient’s, and otherwise valid', async () => {
    const { body } = await connect();
    ehr.switches.foreignPatientEvery = 3;
    const served = await resources(body.access_token, '&_count=6');
    const own = { reference: 'Patient/ada' };
    const foreign = { reference: 'Patient/someone-else' };
    expect(served.map((resource: any) => resource.subject)).to.deep.equal([own, own, foreign, own, own, foreign]);
    expect(served[2]).to.include.keys('code', 'status', 'effectiveDateTime', 'valueQuantity');
  });

  it('padObservations pads each observation, or every k-th, to a JSON length with a note', async () => {
    const { body } = await connect();
    const bytes = 200 * 1024;
    ehr.switches.padObservations = { bytes };
    const padded = await resources(body.access_token, '&_count=10');
    for (const resource of padded) expect(JSON.stringify(resource).length).to.be.within(bytes, bytes + 300);
    expect(padded[0].note).to.have.length(1);
    expect(padded[0].note[0].text).to.match(/^x+$/);
    expect(padded[3].code.coding[0].code, 'the rest is as ever').to.equal('85354-9');

    ehr.switches.padObservations = { bytes: 4096, every: 2 };
    const sizes = (await resources(body.access_token, '&_count=4')).map((r: any) => JSON.stringify(r).length);
    expect(sizes.map((size: number) => size >= 4096)).to.deep.equal([false, true, false, true]);
  });

  it('lastUpdatedOffsetMs shifts the meta.lastUpdated shown, not the one searched by', async () => {
    const { body } = await connect();
    ehr.switches.lastUpdatedOffsetMs = Date.parse('2031-01-01T00:00:00Z') - Date.parse('2024-01-01T00:00:00Z');
    const page = (await search(body.access_token, '&_lastUpdated=lt2024-01-01T00:02:00Z')).body;
    expect(page.entry.map((entry: any) => entry.resource.meta.lastUpdated)).to.deep.equal([
      '2031-01-01T00:00:00.000Z',
      '2031-01-01T00:01:00.000Z',
    ]);
    expect(page.meta.lastUpdated, 'after the server’s clock').to.equal('2030-06-01T12:00:00.000Z');
  });

  it('Date and Bundle meta.lastUpdated follow the injected clock; bundleLastUpdated=false drops the meta', async () => {
    const { body } = await connect();
    const first = await search(body.access_token);
    expect([first.headers.get('date'), first.body.meta.lastUpdated]).to.deep.equal([
      'Sat, 01 Jun 2030 12:00:00 GMT',
      '2030-06-01T12:00:00.000Z',
    ]);
    clock += 30 * 60_000;
    const later = await search(body.access_token);
    expect([later.headers.get('date'), later.body.meta.lastUpdated]).to.deep.equal([
      'Sat, 01 Jun 2030 12:30:00 GMT',
      '2030-06-01T12:30:00.000Z',
    ]);
    expect((await refresh(body.refresh_token)).headers.get('date')).to.equal('Sat, 01 Jun 2030 12:30:00 GMT');
    ehr.switches.bundleLastUpdated = false;
    const unstamped = await search(body.access_token);
    expect(unstamped.body).to.not.have.property('meta');
    expect(unstamped.headers.get('date')).to.equal('Sat, 01 Jun 2030 12:30:00 GMT');
  });

  it('endpointHostnames makes discovery name the OAuth endpoints on another host, and iss follows', async () => {
    ehr.switches.endpointHostnames = { 'sandbox-health': 'localhost' };
    const advertised = `http://localhost:${new URL(ehr.origin).port}/oauth/sandbox-health`;
    expect(await discover()).to.include({
      issuer: advertised,
      authorization_endpoint: `${advertised}/authorize`,
      token_endpoint: `${advertised}/token`,
      revocation_endpoint: `${advertised}/revoke`,
    });
    const metadata = await getJson(`${ehr.fhirBaseUrl('sandbox-health')}/metadata`);
    expect(metadata.rest[0].security.extension[0].extension.map((uri: any) => uri.valueUri)).to.deep.equal([
      `${advertised}/authorize`,
      `${advertised}/token`,
      `${advertised}/revoke`,
    ]);
    expect((await authorizationResponse()).searchParams.get('iss')).to.equal(advertised);
    expect((await discover('sandbox-clinic')).issuer, 'other brands as ever').to.equal(
      `${ehr.origin}/oauth/sandbox-clinic`,
    );
  });

  it('smartConfiguration breaks discovery in each way Portico must handle', async () => {
    const url = `${ehr.fhirBaseUrl('sandbox-health')}/.well-known/smart-configuration`;
    ehr.switches.smartConfiguration = 'no-s256';
    expect(((await (await fetch(url)).json()) as any).code_challenge_methods_supported).to.not.include('S256');
    ehr.switches.smartConfiguration = 'not-json';
    const html = await fetch(url);
    expect(html.headers.get('content-type')).to.match(/^text\/html/);
    ehr.switches.smartConfiguration = 'error-500';
    expect((await fetch(url)).status).to.equal(500);
    ehr.switches.smartConfiguration = 'hang';
    const hanging = fetch(url).then(
      () => 'answered',
      () => 'connection closed',
    );
    const raced = await Promise.race([hanging, new Promise((resolve) => setTimeout(resolve, 200, 'still waiting'))]);
    expect(raced).to.equal('still waiting');
    await ehr.close();
    expect(await hanging).to.equal('connection closed');
    ehr = await startSandboxEhr({ clients: [] }); // afterEach closes one
  });

  it('stats count token requests by grant and reset', async () => {
    const { body } = await connect();
    await refresh(body.refresh_token);
    expect(ehr.stats.tokenRequests).to.deep.equal({ authorization_code: 1, refresh_token: 1 });
    expect(ehr.stats.lastTokenRequest).to.deep.equal({ grantType: 'refresh_token', clientAuthMethod: 'none' });
    ehr.stats.reset();
    expect(ehr.stats.tokenRequests).to.deep.equal({ authorization_code: 0, refresh_token: 0 });
    expect(ehr.stats.lastTokenRequest).to.equal(undefined);
  });
});

describe('sandbox EHR: a large record', () => {
  it('serves 10,000 observations page by page, in well under 5 seconds', async () => {
    const patient = {
      id: 'big',
      username: 'big',
      password: 'sandbox',
      name: 'Big Record',
      birthDate: '1970-01-01',
      observations: 10_000,
    };
    const ehr = await startSandboxEhr({
      clients: [{ clientId: APP.clientId, redirectUris: [APP.redirectUri], auth: { method: 'none' } }],
      patients: [patient],
    });
    try {
      const { body } = await connectPublicClient(ehr, { brandKey: 'sandbox-health', ...APP, username: 'big' });
      const started = performance.now();
      let next: string | undefined = `${ehr.fhirBaseUrl('sandbox-health')}/Observation?patient=big&_count=100`;
      const ids = new Set<string>();
      while (next) {
        const page: any = (await fhirGet(next, body.access_token)).body;
        for (const entry of page.entry) ids.add(entry.resource.id);
        next = page.link.find((l: any) => l.relation === 'next')?.url;
      }
      expect(ids.size).to.equal(10_000);
      expect(performance.now() - started).to.be.below(5000);
    } finally {
      await ehr.close();
    }
  });
});
