// The token endpoint: authorization_code with PKCE, and refresh_token with rotation and reuse detection. A code
// or a retired refresh token presented again revokes its whole family: whoever replays it may be an attacker.
import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { BadRequest, readForm, single } from '../http.js';
import type { World } from '../world.js';
import { authenticateClient, presentedMethod } from './client-auth.js';
import { OAuthError, sendOAuthError } from './errors.js';
import type { Family } from './grants.js';
import { hasScope } from './scopes.js';

const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
const invalidGrant = (description: string) => new OAuthError('invalid_grant', description);

export async function tokenEndpoint(world: World, brandKey: string, ctx: Context): Promise<void> {
  try {
    const form = await readForm(ctx);
    const grantType = single(form, 'grant_type') ?? '';
    if (grantType === 'authorization_code' || grantType === 'refresh_token') world.stats.tokenRequests[grantType] += 1;
    world.stats.lastTokenRequest = { grantType, clientAuthMethod: presentedMethod(ctx, form) };
    const failure = world.switches.takeFailure('token');
    if (failure) return sendOAuthError(ctx, plannedError(failure.status), failure.retryAfterSeconds);

    const client = await authenticateClient(world, brandKey, ctx, form);
    let body: Record<string, unknown>;
    if (grantType === 'authorization_code') body = exchangeCode(world, brandKey, client.clientId, form);
    else if (grantType === 'refresh_token') body = await refresh(world, brandKey, client.clientId, form);
    else throw new OAuthError('unsupported_grant_type', `grant_type "${grantType}" is not supported`);
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Pragma', 'no-cache');
    ctx.body = shaped(world, body);
  } catch (error) {
    if (error instanceof BadRequest) return sendOAuthError(ctx, new OAuthError('invalid_request', error.message));
    if (error instanceof OAuthError) return sendOAuthError(ctx, error);
    throw error;
  }
}

function plannedError(status: 401 | 429 | 500 | 503): OAuthError {
  if (status === 401) return new OAuthError('invalid_client', 'planned failure (sandbox switch)', 401);
  if (status === 500) return new OAuthError('server_error', 'planned failure (sandbox switch)', 500);
  return new OAuthError('temporarily_unavailable', 'planned failure (sandbox switch)', status);
}

function exchangeCode(
  world: World,
  brandKey: string,
  clientId: string,
  form: URLSearchParams,
): Record<string, unknown> {
  const value = single(form, 'code');
  if (!value) throw new OAuthError('invalid_request', 'code is required');
  const code = world.grants.code(value);
  if (!code || code.family.brandKey !== brandKey) throw invalidGrant('unknown code');
  if (code.family.clientId !== clientId) throw invalidGrant('the code was issued to another client');
  if (code.used) {
    code.family.revoked = true;
    throw invalidGrant('the code was already used; every token issued from it is now revoked');
  }
  // Consumed by its first presentation, successful or not: a guessed verifier gets one try.
  code.used = true;
  if (code.expiresAt <= world.now()) throw invalidGrant('the code has expired');
  if (single(form, 'redirect_uri') !== code.redirectUri) throw invalidGrant('redirect_uri does not match');
  const verifier = single(form, 'code_verifier') ?? '';
  if (!VERIFIER.test(verifier)) throw invalidGrant('code_verifier is missing or malformed');
  if (createHash('sha256').update(verifier).digest('base64url') !== code.codeChallenge)
    throw invalidGrant('code_verifier does not match the code_challenge');
  const refreshToken = hasScope(code.family.scope, 'offline_access')
    ? world.grants.issueRefreshToken(code.family)
    : undefined;
  return tokens(world, code.family, refreshToken);
}

async function refresh(
  world: World,
  brandKey: string,
  clientId: string,
  form: URLSearchParams,
): Promise<Record<string, unknown>> {
  const value = single(form, 'refresh_token');
  if (!value) throw new OAuthError('invalid_request', 'refresh_token is required');
  const requestedScope = single(form, 'scope');
  // Held here, after authentication, so a test sees the request counted and in flight.
  await world.switches.refreshGate();
  const found = world.grants.refreshToken(value);
  if (!found || found.family.brandKey !== brandKey) throw invalidGrant('unknown refresh token');
  const { family } = found;
  if (family.clientId !== clientId) throw invalidGrant('the refresh token was issued to another client');
  if (family.revoked) throw invalidGrant('the refresh token has been revoked');
  if (found.retired) {
    family.revoked = true;
    throw invalidGrant('the refresh token was already used; the authorization is now revoked');
  }
  if (requestedScope !== undefined) {
    const granted = family.scope.split(' ');
    const outside = requestedScope.split(' ').filter((s) => s !== '' && !granted.includes(s));
    if (outside.length > 0) throw new OAuthError('invalid_scope', `not granted: ${outside.join(' ')}`);
  }
  let refreshToken = value;
  if (world.switches.rotateRefreshTokens) {
    found.retired = true;
    refreshToken = world.grants.issueRefreshToken(family);
  }
  return tokens(world, family, refreshToken, world.switches.refreshPatient ?? family.patientId);
}

/** `patient` is the one the response names: the grant's, unless the refreshPatient switch names another. */
function tokens(
  world: World,
  family: Family,
  refreshToken: string | undefined,
  patient = family.patientId,
): Record<string, unknown> {
  return {
    access_token: world.grants.issueAccessToken(family, world.accessTokenTtlSeconds),
    token_type: 'Bearer',
    expires_in: world.accessTokenTtlSeconds,
    scope: family.scope,
    ...(hasScope(family.scope, 'launch/patient') ? { patient } : {}),
    ...(refreshToken ? { refresh_token: refreshToken } : {}),
  };
}

/** The tokenResponse switch: a response missing a field, or with another token_type, as a faulty EHR sends. */
function shaped(world: World, body: Record<string, unknown>): Record<string, unknown> {
  const change = world.switches.tokenResponse;
  if (!change) return body;
  const result = { ...body };
  for (const field of change.omit ?? []) delete result[field];
  if (change.tokenType !== undefined) result.token_type = change.tokenType;
  return result;
}
