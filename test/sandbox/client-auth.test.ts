// Client authentication at the sandbox's token and revocation endpoints: each client exactly as registered
// (public, client_secret_basic, private_key_jwt with ES384 or RS384), and the assertions a strict EHR refuses.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { startSandboxEhr, type SandboxClient, type SandboxEhr } from '../../sandbox/src/server.js';
import { authorizeUrl, basicAuth, fhirGet, pkce, postForm, signIn } from '../../testkit/sandbox-ehr.js';

const REDIRECT = 'http://127.0.0.1:9/callback';
const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

describe('sandbox EHR: client authentication', () => {
  let ehr: SandboxEhr;
  const clock = Date.parse('2026-03-01T12:00:00Z');
  const keys: Record<'ES384' | 'RS384', CryptoKey> = {} as never;

  before(async () => {
    const clients: SandboxClient[] = [
      { clientId: 'basic-app', redirectUris: [REDIRECT], auth: { method: 'client_secret_basic', secret: 'se:cr et' } },
      { clientId: 'public-app', redirectUris: [REDIRECT], auth: { method: 'none' } },
    ];
    for (const alg of ['ES384', 'RS384'] as const) {
      const pair = await generateKeyPair(alg);
      keys[alg] = pair.privateKey;
      const jwk = { ...(await exportJWK(pair.publicKey)), kid: `${alg}-key`, alg };
      clients.push({
        clientId: `jwt-${alg}`,
        redirectUris: [REDIRECT],
        auth: { method: 'private_key_jwt', jwks: [jwk] },
      });
    }
    ehr = await startSandboxEhr({ clients, now: () => clock });
  });
  after(() => ehr.close());
  const tokenUrl = () => `${ehr.origin}/oauth/sandbox-health/token`;

  /** A fresh code for the client, and the form that exchanges it (client authentication left to the caller). */
  async function codeFor(clientId: string): Promise<Record<string, string>> {
    const { verifier, challenge } = pkce();
    const back = await signIn(
      authorizeUrl(ehr, 'sandbox-health', { client_id: clientId, redirect_uri: REDIRECT }, challenge),
    );
    return {
      grant_type: 'authorization_code',
      code: back.searchParams.get('code')!,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    };
  }

  function assertion(
    alg: 'ES384' | 'RS384',
    claims: { exp?: number; jti?: string; aud?: string } = {},
  ): Promise<string> {
    const now = Math.floor(clock / 1000);
    return new SignJWT({ jti: claims.jti ?? randomUUID() })
      .setProtectedHeader({ alg, kid: `${alg}-key`, typ: 'JWT' })
      .setIssuer(`jwt-${alg}`)
      .setSubject(`jwt-${alg}`)
      .setAudience(claims.aud ?? tokenUrl())
      .setIssuedAt(now)
      .setExpirationTime(claims.exp ?? now + 240)
      .sign(keys[alg]);
  }

  it('accepts client_secret_basic with the right secret and refuses a wrong one, or the secret in the body', async () => {
    const right = await postForm(tokenUrl(), await codeFor('basic-app'), {
      authorization: basicAuth('basic-app', 'se:cr et'),
    });
    expect(right.status).to.equal(200);
    expect(ehr.stats.lastTokenRequest).to.deep.equal({
      grantType: 'authorization_code',
      clientAuthMethod: 'client_secret_basic',
    });
    const wrong = await postForm(tokenUrl(), await codeFor('basic-app'), {
      authorization: basicAuth('basic-app', 'guess'),
    });
    expect([wrong.status, wrong.body.error]).to.deep.equal([401, 'invalid_client']);
    expect(wrong.headers.get('www-authenticate')).to.match(/^Basic/);
    const inBody = await postForm(tokenUrl(), {
      ...(await codeFor('basic-app')),
      client_id: 'basic-app',
      client_secret: 'se:cr et',
    });
    expect([inBody.status, inBody.body.error]).to.deep.equal([401, 'invalid_client']);
    const asPublic = await postForm(tokenUrl(), { ...(await codeFor('basic-app')), client_id: 'basic-app' });
    expect([asPublic.status, asPublic.body.error]).to.deep.equal([401, 'invalid_client']);
  });

  for (const alg of ['ES384', 'RS384'] as const) {
    it(`accepts a private_key_jwt assertion signed with ${alg}, once`, async () => {
      const signed = await assertion(alg);
      const form = { client_assertion_type: ASSERTION_TYPE, client_assertion: signed };
      const answer = await postForm(tokenUrl(), { ...(await codeFor(`jwt-${alg}`)), ...form });
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      expect(ehr.stats.lastTokenRequest?.clientAuthMethod).to.equal('private_key_jwt');
      const replay = await postForm(tokenUrl(), { ...(await codeFor(`jwt-${alg}`)), ...form });
      expect([replay.status, replay.body.error]).to.deep.equal([401, 'invalid_client']);
      expect(replay.body.error_description).to.contain('jti');
    });
  }

  it('refuses assertions that live over 5 minutes, have expired, are for another audience or another key', async () => {
    const now = Math.floor(clock / 1000);
    const send = async (signed: string) =>
      postForm(tokenUrl(), {
        ...(await codeFor('jwt-ES384')),
        client_assertion_type: ASSERTION_TYPE,
        client_assertion: signed,
      });
    expect((await send(await assertion('ES384', { exp: now + 301 }))).status).to.equal(401);
    expect((await send(await assertion('ES384', { exp: now - 1 }))).status).to.equal(401);
    expect((await send(await assertion('ES384', { aud: 'https://elsewhere.example/token' }))).status).to.equal(401);
    const otherKey = await new SignJWT({ jti: randomUUID() })
      .setProtectedHeader({ alg: 'RS384', kid: 'RS384-key' })
      .setIssuer('jwt-ES384')
      .setSubject('jwt-ES384')
      .setAudience(tokenUrl())
      .setExpirationTime(now + 60)
      .sign(keys.RS384);
    expect((await send(otherKey)).body.error).to.equal('invalid_client');
    const issuerAudience = await send(await assertion('ES384', { aud: `${ehr.origin}/oauth/sandbox-health` }));
    expect(issuerAudience.status, 'the issuer is an accepted audience too').to.equal(200);
  });

  it('interoperates with oauth4webapi’s private_key_jwt', async () => {
    const as = (await (
      await fetch(`${ehr.fhirBaseUrl('sandbox-health')}/.well-known/smart-configuration`)
    ).json()) as oauth.AuthorizationServer;
    // oauth4webapi dates its assertion by its own clock: skewed to the sandbox's injected one.
    const client: oauth.Client = { client_id: 'jwt-ES384', [oauth.clockSkew]: Math.round((clock - Date.now()) / 1000) };
    const { verifier, challenge } = pkce();
    const back = await signIn(
      authorizeUrl(ehr, 'sandbox-health', { client_id: 'jwt-ES384', redirect_uri: REDIRECT, state: 'st' }, challenge),
    );
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.PrivateKeyJwt({ key: keys.ES384, kid: 'ES384-key' }),
      oauth.validateAuthResponse(as, client, back, 'st'),
      REDIRECT,
      verifier,
      { [oauth.allowInsecureRequests]: true },
    );
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
    expect(tokens.access_token).to.be.a('string');
  });

  it('refuses a public client that sends an Authorization header, and an unknown client', async () => {
    const basic = await postForm(tokenUrl(), await codeFor('public-app'), {
      authorization: basicAuth('public-app', 'x'),
    });
    expect(basic.status).to.equal(401);
    expect((await postForm(tokenUrl(), { ...(await codeFor('public-app')), client_id: 'nobody' })).status).to.equal(
      401,
    );
  });

  it('revokes a refresh token and its family at the revocation endpoint', async () => {
    const form = await codeFor('public-app');
    const { body } = await postForm(tokenUrl(), { ...form, client_id: 'public-app' });
    const revokeUrl = `${ehr.origin}/oauth/sandbox-health/revoke`;
    const revoked = await fetch(revokeUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: body.refresh_token, client_id: 'public-app' }),
    });
    expect(revoked.status).to.equal(200);
    expect(ehr.stats.revocations).to.be.greaterThan(0);
    expect((await fhirGet(`${ehr.fhirBaseUrl('sandbox-health')}/Patient/ada`, body.access_token)).status).to.equal(401);
    const refresh = await postForm(tokenUrl(), {
      grant_type: 'refresh_token',
      refresh_token: body.refresh_token,
      client_id: 'public-app',
    });
    expect(refresh.body.error).to.equal('invalid_grant');
    const unknown = await postForm(revokeUrl, { token: 'never-issued', client_id: 'public-app' });
    expect(unknown.status).to.equal(200);
    expect((await postForm(revokeUrl, { token: 'x', client_id: 'basic-app' })).status).to.equal(401);
  });
});
