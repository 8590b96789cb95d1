// The sandbox EHR as a SMART client meets it: discovery, a whole standalone patient launch with a public client
// (driven by oauth4webapi, a real client library), FHIR paging and patient binding. Refusals: ./refusals.test.ts.
import { expect } from 'chai';
import * as oauth from 'oauth4webapi';
import { validateBundle } from '../../api/src/features/clinical/ingest/observations.js';
import { startSandboxEhr, type SandboxEhr } from '../../sandbox/src/server.js';
import { DEMO_PATIENTS, DEMO_RECORDS } from '../../sandbox/src/data.js';
import {
  authorizeUrl,
  connectPublicClient,
  fhirGet,
  getJson,
  pkce,
  signIn,
  V2_SCOPE,
} from '../../testkit/sandbox-ehr.js';

const APP = { clientId: 'test-app', redirectUri: 'http://127.0.0.1:9/callback' };

describe('sandbox EHR: SMART standalone launch', () => {
  let ehr: SandboxEhr;
  let clock = Date.parse('2026-03-01T12:00:00Z');

  before(async () => {
    ehr = await startSandboxEhr({
      clients: [{ clientId: APP.clientId, redirectUris: [APP.redirectUri], auth: { method: 'none' } }],
      now: () => clock,
    });
  });
  after(() => ehr.close());
  const connect = (options: { username?: string; scope?: string; brandKey?: string } = {}) =>
    connectPublicClient(ehr, { brandKey: 'sandbox-health', ...APP, ...options });

  it('publishes SMART discovery and a CapabilityStatement without a token', async () => {
    const config = await getJson(`${ehr.fhirBaseUrl('sandbox-health')}/.well-known/smart-configuration`);
    expect(config.issuer).to.equal(`${ehr.origin}/oauth/sandbox-health`);
    expect(config.token_endpoint).to.equal(`${ehr.origin}/oauth/sandbox-health/token`);
    expect(config.code_challenge_methods_supported).to.deep.equal(['S256']);
    expect(config.capabilities).to.include.members([
      'launch-standalone',
      'permission-v2',
      'client-confidential-asymmetric',
    ]);
    const clinic = await getJson(`${ehr.fhirBaseUrl('sandbox-clinic')}/.well-known/smart-configuration`);
    expect(clinic.capabilities).to.include('permission-v1').and.not.include('permission-v2');
    const metadata = await getJson(`${ehr.fhirBaseUrl('sandbox-health')}/metadata`);
    expect(metadata.fhirVersion).to.equal('4.0.1');
    const uris = metadata.rest[0].security.extension[0].extension;
    expect(uris).to.deep.include({ url: 'authorize', valueUri: config.authorization_endpoint });
  });

  it('lets a public client connect, then pages through all of the patient’s observations once each', async () => {
    const config = await getJson(`${ehr.fhirBaseUrl('sandbox-health')}/.well-known/smart-configuration`);
    const as = config as oauth.AuthorizationServer;
    const client: oauth.Client = { client_id: APP.clientId };
    const { verifier, challenge } = pkce();
    const url = authorizeUrl(
      ehr,
      'sandbox-health',
      { client_id: APP.clientId, redirect_uri: APP.redirectUri },
      challenge,
    );

    const page = await (await fetch(url)).text();
    expect(page).to.contain('Sandbox credentials').and.contain('ada').and.contain('sandbox');
    expect(page)
      .to.match(/<label for="username">/)
      .and.match(/value="allow"/)
      .and.match(/value="deny"/);
    const back = await signIn(url, { username: 'ada', password: 'sandbox' });
    expect(back.origin + back.pathname).to.equal(APP.redirectUri);
    const params = oauth.validateAuthResponse(as, client, back, new URL(url).searchParams.get('state')!);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      params,
      APP.redirectUri,
      verifier,
      {
        [oauth.allowInsecureRequests]: true,
      },
    );
    expect(response.headers.get('cache-control')).to.equal('no-store');
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
    expect(tokens).to.include({ token_type: 'bearer', patient: 'ada', scope: V2_SCOPE, expires_in: 3600 });
    expect(tokens.refresh_token).to.be.a('string');

    const ids = new Set<string>();
    let next: string | undefined = `${ehr.fhirBaseUrl('sandbox-health')}/Observation?patient=ada&_count=7`;
    let pages = 0;
    while (next) {
      const { status, body } = await fhirGet(next, tokens.access_token);
      expect(status).to.equal(200);
      expect(body.total).to.equal(120);
      expect(validateBundle(body).ok, JSON.stringify(validateBundle(body))).to.equal(true);
      for (const entry of body.entry) {
        expect(ids.has(entry.resource.id)).to.equal(false);
        ids.add(entry.resource.id);
        expect(entry.fullUrl).to.equal(`${ehr.fhirBaseUrl('sandbox-health')}/Observation/${entry.resource.id}`);
      }
      next = body.link.find((link: { relation: string }) => link.relation === 'next')?.url;
      if (next) expect(new URL(next).origin).to.equal(ehr.origin);
      pages += 1;
    }
    expect(ids.size).to.equal(120);
    expect(pages).to.equal(18);
    const patient = await fhirGet(`${ehr.fhirBaseUrl('sandbox-health')}/Patient/ada`, tokens.access_token);
    expect(patient.body).to.include({ resourceType: 'Patient', id: 'ada', birthDate: '1985-12-10' });
  });

  it('serves realistic, deterministic observations: vital signs and labs with LOINC codes', async () => {
    const first = await connect();
    const again = await connect();
    const read = async (accessToken: string) =>
      (await fhirGet(`${ehr.fhirBaseUrl('sandbox-health')}/Observation?patient=Patient/ada&_count=8`, accessToken))
        .body;
    const [a, b] = [await read(first.body.access_token), await read(again.body.access_token)];
    expect(a.entry.map((e: any) => e.resource)).to.deep.equal(b.entry.map((e: any) => e.resource));
    const codes = a.entry.map((e: any) => e.resource.code.coding[0].code);
    expect(codes).to.include.members(['8867-4', '29463-7', '2339-0', '85354-9']);
    const panel = a.entry.find((e: any) => e.resource.code.coding[0].code === '85354-9').resource;
    expect(panel.component.map((c: any) => c.code.coding[0].code)).to.deep.equal(['8480-6', '8462-4']);
    expect(a.entry[0].resource.subject).to.deep.equal({ reference: 'Patient/ada' });
    expect(a.entry[0].resource.meta).to.have.keys('versionId', 'lastUpdated');
  });

  it('returns only what changed after a _lastUpdated high-water mark', async () => {
    const { body } = await connect({ username: 'grace' });
    clock += 60_000;
    ehr.addObservations('sandbox-health', 'grace', 3);
    const since = new Date(clock - 1).toISOString();
    const search = (query: string) =>
      fhirGet(`${ehr.fhirBaseUrl('sandbox-health')}/Observation?patient=grace&${query}`, body.access_token);
    const changed = (await search(`_lastUpdated=gt${since}`)).body;
    expect(changed.total).to.equal(3);
    expect(changed.entry.map((e: any) => e.resource.meta.lastUpdated)).to.deep.equal(
      Array(3).fill(new Date(clock).toISOString()),
    );
    clock += 60_000;
    ehr.touchObservation('sandbox-health', 'grace', 0);
    const touched = (await search(`_lastUpdated=ge${new Date(clock).toISOString()}`)).body;
    expect(touched.entry.map((e: any) => [e.resource.id, e.resource.meta.versionId])).to.deep.equal([
      ['grace-obs-0000000', '2'],
    ]);
    expect(
      (await search(`_lastUpdated=lt2024-01-01T00:02:00Z&_lastUpdated=ge2024-01-01T00:01:00Z`)).body.total,
    ).to.equal(1);
  });

  it('lets the token’s patient only be read and searched', async () => {
    const { body } = await connect({ username: 'ada' });
    const base = ehr.fhirBaseUrl('sandbox-health');
    expect((await fhirGet(`${base}/Observation?patient=grace`, body.access_token)).status).to.equal(403);
    expect((await fhirGet(`${base}/Patient/grace`, body.access_token)).status).to.equal(403);
    const clinic = await fhirGet(`${ehr.fhirBaseUrl('sandbox-clinic')}/Patient/ada`, body.access_token);
    expect(clinic.status).to.equal(401);
    const anonymous = await fetch(`${base}/Patient/ada`);
    expect(anonymous.status).to.equal(401);
    expect(anonymous.headers.get('www-authenticate')).to.equal('Bearer error="invalid_token"');
    expect(((await anonymous.json()) as any).resourceType).to.equal('OperationOutcome');
  });

  it('sends the patient back with access_denied when they deny, and keeps the request on a wrong password', async () => {
    const { challenge } = pkce();
    const url = authorizeUrl(
      ehr,
      'sandbox-health',
      { client_id: APP.clientId, redirect_uri: APP.redirectUri, state: 's1' },
      challenge,
    );
    const denied = await signIn(url, { decision: 'deny' });
    expect(Object.fromEntries(denied.searchParams)).to.deep.equal({
      error: 'access_denied',
      state: 's1',
      iss: `${ehr.origin}/oauth/sandbox-health`,
    });

    const page = await (await fetch(url)).text();
    const id = /name="id" value="([^"]+)"/.exec(page)![1]!;
    const post = (password: string) =>
      fetch(`${ehr.origin}/oauth/sandbox-health/authorize`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ id, username: 'ada', password, decision: 'allow' }),
      });
    const wrong = await post('nope');
    expect(wrong.status).to.equal(200);
    expect(await wrong.text()).to.contain('Wrong username or password');
    const right = await post('sandbox');
    expect(right.status).to.equal(302);
    expect(new URL(right.headers.get('location')!).searchParams.get('code')).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect((await post('sandbox')).status, 'the request is single use').to.equal(400);
  });
});

describe('sandbox EHR: whole records, each patient’s own', () => {
  let ehr: SandboxEhr;

  before(async () => {
    ehr = await startSandboxEhr({
      clients: [{ clientId: APP.clientId, redirectUris: [APP.redirectUri], auth: { method: 'none' } }],
      patients: DEMO_PATIENTS.map((p) => ({ ...p, observations: 0, record: DEMO_RECORDS[p.id] })),
      now: () => Date.parse('2026-03-01T12:00:00Z'),
    });
  });
  after(() => ehr.close());

  it('reads the token’s patient’s records, their attachments and what they point at; never another’s', async () => {
    const scope = 'launch/patient offline_access patient/*.rs';
    const { body } = await connectPublicClient(ehr, { brandKey: 'sandbox-health', ...APP, username: 'ada', scope });
    const base = ehr.fhirBaseUrl('sandbox-health');
    const first = async (patient: string, type: string) => {
      const other = await connectPublicClient(ehr, { brandKey: 'sandbox-health', ...APP, username: patient, scope });
      const found = await fhirGet(`${base}/${type}?patient=${patient}&_count=100`, other.body.access_token);
      return (found.body.entry as { resource: Record<string, any> }[]).map((e) => e.resource);
    };
    const [own] = await first('ada', 'Condition');
    const [theirs] = await first('grace', 'Condition');
    expect((await fhirGet(`${base}/Condition/${own!.id}`, body.access_token)).status).to.equal(200);
    expect((await fhirGet(`${base}/Condition/${theirs!.id}`, body.access_token)).status).to.equal(404);
    const binaryOf = (report: Record<string, any>) =>
      (report.presentedForm?.[0]?.url ?? report.content?.[0]?.attachment?.url) as string | undefined;
    const ownNote = (await first('ada', 'DocumentReference')).map(binaryOf).find(Boolean)!;
    const theirNote = (await first('grace', 'DocumentReference')).map(binaryOf).find(Boolean)!;
    expect((await fhirGet(ownNote, body.access_token)).status).to.equal(200);
    expect((await fhirGet(theirNote, body.access_token)).status).to.equal(404);
    // A shared resource (the practitioner of an encounter) is anyone's to read.
    const encounter = (await first('grace', 'Encounter'))[0]!;
    const practitioner = (encounter.participant[0].individual.reference as string).replace(
      /^.*\/(Practitioner\/)/,
      '$1',
    );
    expect((await fhirGet(`${base}/${practitioner}`, body.access_token)).status).to.equal(200);
  });
});
