// What the sandbox EHR refuses, as a strict EHR does: authorization requests without PKCE S256 or for another
// audience, unregistered redirect URIs, scopes the brand does not speak, and replayed codes and refresh tokens.
import { expect } from 'chai';
import { startSandboxEhr, type SandboxEhr } from '../../sandbox/src/server.js';
import {
  authorizeUrl,
  connectPublicClient,
  fhirGet,
  pkce,
  postForm,
  signIn,
  V1_SCOPE,
} from '../../testkit/sandbox-ehr.js';

const APP = { clientId: 'test-app', redirectUri: 'http://127.0.0.1:9/callback' };

describe('sandbox EHR: refusals', () => {
  let ehr: SandboxEhr;
  let clock = Date.parse('2026-03-01T12:00:00Z');

  before(async () => {
    ehr = await startSandboxEhr({
      clients: [{ clientId: APP.clientId, redirectUris: [APP.redirectUri], auth: { method: 'none' } }],
      now: () => clock,
    });
  });
  after(() => ehr.close());
  const token = (brand = 'sandbox-health') => `${ehr.origin}/oauth/${brand}/token`;
  const connect = (options: { username?: string; scope?: string; brandKey?: string } = {}) =>
    connectPublicClient(ehr, { brandKey: 'sandbox-health', ...APP, ...options });

  const refusal = async (params: Record<string, string | undefined>, brand = 'sandbox-health') => {
    const url = authorizeUrl(
      ehr,
      brand,
      { client_id: APP.clientId, redirect_uri: APP.redirectUri, state: 'st', ...params },
      pkce().challenge,
    );
    const response = await fetch(url, { redirect: 'manual' });
    return { status: response.status, location: response.headers.get('location'), text: await response.text() };
  };
  const errorOf = (location: string | null) => Object.fromEntries(new URL(location!).searchParams);

  it('an authorization request without PKCE S256, or for another aud', async () => {
    expect(errorOf((await refusal({ code_challenge_method: undefined })).location)).to.include({
      error: 'invalid_request',
      state: 'st',
    });
    expect(errorOf((await refusal({ code_challenge_method: 'plain' })).location).error).to.equal('invalid_request');
    expect(errorOf((await refusal({ code_challenge: undefined })).location).error).to.equal('invalid_request');
    expect(errorOf((await refusal({ aud: ehr.fhirBaseUrl('sandbox-clinic') })).location).error).to.equal(
      'invalid_request',
    );
    expect(errorOf((await refusal({ state: undefined })).location).error).to.equal('invalid_request');
  });

  it('an unknown redirect_uri or client with a page, never a redirect', async () => {
    const wrongUri = await refusal({ redirect_uri: 'http://127.0.0.1:9/elsewhere' });
    expect([wrongUri.status, wrongUri.location]).to.deep.equal([400, null]);
    expect(wrongUri.text).to.contain('redirect_uri');
    expect((await refusal({ client_id: 'nobody' })).status).to.equal(400);
  });

  it('v2 scopes at a v1-only brand, and accepts v1 scopes there', async () => {
    expect(
      errorOf((await refusal({ aud: ehr.fhirBaseUrl('sandbox-clinic') }, 'sandbox-clinic')).location).error,
    ).to.equal('invalid_scope');
    const v1 = await connect({ brandKey: 'sandbox-clinic', scope: V1_SCOPE });
    expect(v1.body.scope).to.equal(V1_SCOPE);
    const read = await fhirGet(`${ehr.fhirBaseUrl('sandbox-clinic')}/Observation?patient=ada`, v1.body.access_token);
    expect(read.body.entry).to.have.length(50);
  });

  it('a wrong code_verifier', async () => {
    const { verifier, challenge } = pkce();
    const back = await signIn(
      authorizeUrl(ehr, 'sandbox-health', { client_id: APP.clientId, redirect_uri: APP.redirectUri }, challenge),
    );
    const exchange = (codeVerifier: string) =>
      postForm(token(), {
        grant_type: 'authorization_code',
        code: back.searchParams.get('code')!,
        redirect_uri: APP.redirectUri,
        code_verifier: codeVerifier,
        client_id: APP.clientId,
      });
    const wrong = await exchange(pkce().verifier);
    expect([wrong.status, wrong.body.error]).to.deep.equal([400, 'invalid_grant']);
    expect((await exchange(verifier)).body.error, 'the code was spent by the first try').to.equal('invalid_grant');
  });

  it('a code used twice, and revokes the tokens the first use got', async () => {
    const first = await connect();
    expect(first.status).to.equal(200);
    const second = await postForm(token(), {
      grant_type: 'authorization_code',
      code: first.code,
      redirect_uri: first.redirectUri,
      code_verifier: first.verifier,
      client_id: APP.clientId,
    });
    expect([second.status, second.body.error]).to.deep.equal([400, 'invalid_grant']);
    expect(
      (await fhirGet(`${ehr.fhirBaseUrl('sandbox-health')}/Patient/ada`, first.body.access_token)).status,
    ).to.equal(401);
    const refresh = await postForm(token(), {
      grant_type: 'refresh_token',
      refresh_token: first.body.refresh_token,
      client_id: APP.clientId,
    });
    expect(refresh.body.error).to.equal('invalid_grant');
  });

  it('a reused refresh token, and revokes the whole authorization', async () => {
    const { body } = await connect();
    const refresh = (refreshToken: string) =>
      postForm(token(), { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: APP.clientId });
    const rotated = await refresh(body.refresh_token);
    expect(rotated.status).to.equal(200);
    expect(rotated.body.refresh_token).to.be.a('string').and.not.equal(body.refresh_token);
    const reused = await refresh(body.refresh_token);
    expect([reused.status, reused.body.error]).to.deep.equal([400, 'invalid_grant']);
    expect((await refresh(rotated.body.refresh_token)).body.error, 'the family is revoked').to.equal('invalid_grant');
    expect(
      (await fhirGet(`${ehr.fhirBaseUrl('sandbox-health')}/Patient/ada`, rotated.body.access_token)).status,
    ).to.equal(401);
  });

  it('a token request that is not a form, and expired access tokens', async () => {
    const json = await fetch(token(), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect([json.status, ((await json.json()) as any).error]).to.deep.equal([400, 'invalid_request']);
    const { body } = await connect();
    clock += 3600_000;
    expect((await fhirGet(`${ehr.fhirBaseUrl('sandbox-health')}/Patient/ada`, body.access_token)).status).to.equal(401);
  });
});
