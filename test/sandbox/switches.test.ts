// The sandbox's failure switches, each shown to do what a Portico test will rely on it for.
import { expect } from 'chai';
import { validateBundle } from '../../api/src/features/clinical/observations.js';
import { startSandboxEhr, type SandboxEhr } from '../../sandbox/src/server.js';
import { authorizeUrl, connectPublicClient, fhirGet, pkce, postForm, signIn } from '../../testkit/sandbox-ehr.js';

const APP = { clientId: 'test-app', redirectUri: 'http://127.0.0.1:9/callback' };

describe('sandbox EHR: failure switches', () => {
  let ehr: SandboxEhr;

  beforeEach(async () => {
    ehr = await startSandboxEhr({
      clients: [{ clientId: APP.clientId, redirectUris: [APP.redirectUri], auth: { method: 'none' } }],
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
    const back = await signIn(
      authorizeUrl(
        ehr,
        'sandbox-health',
        { client_id: APP.clientId, redirect_uri: APP.redirectUri, state: 'x' },
        pkce().challenge,
      ),
    );
    expect(Object.fromEntries(back.searchParams)).to.deep.equal({ error: 'access_denied', state: 'x' });
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
