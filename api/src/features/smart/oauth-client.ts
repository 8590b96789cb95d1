// Portico as an OAuth client of health systems (docs/connecting.md): the authorization request of SMART App Launch's
// standalone patient launch, and the token endpoint's three uses (code exchange, refresh, revocation) through
// oauth4webapi. We use oauth4webapi because it is a small, dependency-free, maintained implementation of exactly
// these client steps (PKCE, client_secret_basic, private_key_jwt, response checks) that takes our own fetch, so
// every request meets the outbound policy and a deadline; openid-client is built on it and adds session and
// OpenID machinery we do not use. Every failure becomes an OAuthFailure carrying the word the patient's app sees.
import * as oauth from 'oauth4webapi';
import type { Clock } from '#core/clock.js';
import { OutboundError, type PolicyFetch } from '#core/net/policy-fetch.js';
import type { SmartServer } from './discovery.js';
import { pinnedEndpointProblem, type SmartRegistration } from './registrations.js';

export const TOKEN_TIMEOUT_MS = 10_000;
/**
 * The error codes of a health system passed on to the app (docs/connecting.md, "Back to the app"): OAuth's own are
 * all of this form; anything else (markup, a sentence) becomes `invalid_request`.
 */
export const EHR_ERROR_CODE = /^[a-z0-9_]{1,64}$/;
export const ehrErrorCode = (error: string | undefined): string =>
  error !== undefined && EHR_ERROR_CODE.test(error) ? error : 'invalid_request';
const BASE_SCOPES = 'launch/patient offline_access';

/** What a token endpoint granted. */
export interface GrantedTokens {
  accessToken: string;
  refreshToken: string | undefined;
  /** Absent when the server did not say (then the token is used until refused). */
  expiresAt: Date | undefined;
  scope: string;
  /** The patient the grant is for (the code exchange's `patient`); refreshes may omit it. */
  patient: string | undefined;
}

/**
 * A refused or failed OAuth step. `error` is the server's own OAuth error code when it gave one (`invalid_grant`,
 * `access_denied`…), `invalid_token_response` for a token answer Portico cannot use, `brand_unavailable` when the
 * server could not be reached or answered outside the protocol.
 */
export class OAuthFailure extends Error {
  override name = 'OAuthFailure';
  constructor(
    readonly error: string,
    message: string,
    /** Tokens the server did grant in an answer Portico refuses: the caller revokes them. */
    readonly granted?: GrantedTokens,
  ) {
    super(message);
  }
}

/**
 * The scopes asked for (docs/connecting.md, "Scopes"): the registration's own; else `launch/patient offline_access`
 * and read access to the whole record: SMART v2's `.rs` where the server lists `permission-v2`, else v1's `.read`,
 * for each record type its `scopes_supported` lists in that form, or for every type (`patient/*`) when it lists none.
 */
export function scopesFor(
  server: SmartServer,
  registration: SmartRegistration,
  recordTypes: readonly string[],
): string {
  if (registration.scopes) return registration.scopes;
  const suffix = server.v2 ? 'rs' : 'read';
  const listed = recordTypes.filter((type) => server.scopesSupported.includes(`patient/${type}.${suffix}`));
  const resources = listed.length > 0 ? listed.map((type) => `patient/${type}.${suffix}`) : [`patient/*.${suffix}`];
  return [BASE_SCOPES, ...resources].join(' ');
}

/** The URL the patient's browser is sent to. */
export function authorizationUrl(
  server: SmartServer,
  registration: SmartRegistration,
  request: { redirectUri: string; state: string; codeChallenge: string; recordTypes: readonly string[] },
): URL {
  const url = new URL(server.authorizationEndpoint);
  const params = {
    response_type: 'code',
    client_id: registration.clientId,
    redirect_uri: request.redirectUri,
    scope: scopesFor(server, registration, request.recordTypes),
    state: request.state,
    aud: server.fhirBaseUrl,
    code_challenge: request.codeChallenge,
    code_challenge_method: 'S256',
  };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url;
}

export class SmartOAuthClient {
  constructor(
    private readonly fetch: PolicyFetch,
    private readonly allowInsecure: boolean,
    private readonly clock: Clock,
    private readonly timeoutMs = TOKEN_TIMEOUT_MS,
  ) {}

  async exchangeCode(
    server: SmartServer,
    registration: SmartRegistration,
    exchange: { code: string; redirectUri: string; codeVerifier: string },
  ): Promise<GrantedTokens> {
    const { as, client, auth } = this.parties(server, registration);
    return this.granted(async () => {
      const params = oauth.validateAuthResponse(
        as,
        client,
        new URLSearchParams({ code: exchange.code }),
        oauth.skipStateCheck,
      );
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        auth,
        params,
        exchange.redirectUri,
        exchange.codeVerifier,
        this.options(),
      );
      return oauth.processAuthorizationCodeResponse(as, client, response);
    }).then((tokens) => {
      if (tokens.patient === undefined || tokens.patient === '')
        throw new OAuthFailure('invalid_token_response', 'the token response names no patient', tokens);
      return tokens;
    });
  }

  async refresh(server: SmartServer, registration: SmartRegistration, refreshToken: string): Promise<GrantedTokens> {
    const { as, client, auth } = this.parties(server, registration);
    return this.granted(async () =>
      oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, auth, refreshToken, this.options()),
      ),
    );
  }

  /** Revokes a token at the server's revocation endpoint; false when it has none. */
  async revoke(server: SmartServer, registration: SmartRegistration, token: string, hint: string): Promise<boolean> {
    if (!server.revocationEndpoint) return false;
    const { as, client, auth } = this.parties(server, registration);
    try {
      const response = await oauth.revocationRequest(as, client, auth, token, {
        ...this.options(),
        additionalParameters: { token_type_hint: hint },
      });
      await oauth.processRevocationResponse(response);
      return true;
    } catch (error) {
      throw failureOf(error);
    }
  }

  private async granted(exchange: () => Promise<oauth.TokenEndpointResponse>): Promise<GrantedTokens> {
    let tokens: oauth.TokenEndpointResponse;
    try {
      tokens = await exchange();
    } catch (error) {
      throw failureOf(error);
    }
    const granted: GrantedTokens = {
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token,
      expiresAt:
        typeof tokens.expires_in === 'number'
          ? new Date(this.clock.now().getTime() + tokens.expires_in * 1000)
          : undefined,
      scope: tokens.scope ?? '',
      patient: typeof tokens['patient'] === 'string' ? tokens['patient'] : undefined,
    };
    if (tokens.token_type !== 'bearer')
      throw new OAuthFailure('invalid_token_response', `the token type is ${tokens.token_type}, not Bearer`, granted);
    return granted;
  }

  /** Every request to the token or revocation endpoint goes through here: only to the hosts the registration pins. */
  private parties(server: SmartServer, registration: SmartRegistration) {
    const unpinned = pinnedEndpointProblem(registration, server);
    if (unpinned !== undefined) throw new OAuthFailure('brand_unavailable', `not sent: ${unpinned}`);
    const as: oauth.AuthorizationServer = {
      issuer: server.issuer,
      authorization_endpoint: server.authorizationEndpoint,
      token_endpoint: server.tokenEndpoint,
      ...(server.revocationEndpoint && { revocation_endpoint: server.revocationEndpoint }),
    };
    const client: oauth.Client = { client_id: registration.clientId };
    const { auth: how } = registration;
    const auth =
      how.method === 'client_secret_basic'
        ? oauth.ClientSecretBasic(how.secret)
        : how.method === 'private_key_jwt'
          ? oauth.PrivateKeyJwt(
              { key: how.key, kid: how.kid },
              {
                // SMART (and RFC 7523 as most EHRs read it) wants the token endpoint as the audience; the library's
                // default is the issuer.
                [oauth.modifyAssertion]: (_header, payload) => {
                  payload.aud = server.tokenEndpoint;
                },
              },
            )
          : oauth.None();
    return { as, client, auth };
  }

  private options() {
    return {
      [oauth.customFetch]: this.fetch as unknown as typeof fetch,
      [oauth.allowInsecureRequests]: this.allowInsecure,
      signal: AbortSignal.timeout(this.timeoutMs),
    };
  }
}

/** The failure an error from a token endpoint step stands for. */
function failureOf(error: unknown): OAuthFailure {
  if (error instanceof OAuthFailure) return error;
  if (error instanceof oauth.ResponseBodyError) {
    const code = ehrErrorCode(error.error);
    return new OAuthFailure(code, `the token endpoint refused: ${code}`);
  }
  if (error instanceof oauth.WWWAuthenticateChallengeError)
    return new OAuthFailure('invalid_client', 'the token endpoint refused the client authentication');
  if (error instanceof OutboundError) return new OAuthFailure('brand_unavailable', error.message);
  if (error instanceof oauth.OperationProcessingError && error.code === oauth.RESPONSE_IS_NOT_CONFORM)
    return new OAuthFailure('brand_unavailable', error.message);
  return new OAuthFailure('invalid_token_response', (error as Error).message ?? String(error));
}
