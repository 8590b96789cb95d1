// The authorization endpoint (SMART App Launch 2.2, standalone patient launch). Before the client and its
// redirect URI are known good, errors are a page here (redirecting to an unchecked URI would make this an open
// redirector, RFC 6749 §4.1.2.1); after, they go back to the app. A good request waits server-side for the
// patient's decision under a random, single-use id.
import { timingSafeEqual, createHash } from 'node:crypto';
import type { Context } from 'koa';
import { BadRequest, queryParams, readForm, single } from '../http.js';
import { sendErrorPage, sendSignInPage } from '../pages.js';
import type { SandboxBrand } from '../types.js';
import { acceptsV2, fhirBase, issuer, type World } from '../world.js';
import type { AuthorizationRequest } from './grants.js';
import { checkRequestedScope } from './scopes.js';

/** A PKCE S256 challenge: the base64url of a SHA-256 digest. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** Back to the app. Every answer names who gave it (RFC 9207 `iss`), unless the iss switch says otherwise. */
function redirectBack(
  world: World,
  brand: SandboxBrand,
  ctx: Context,
  redirectUri: string,
  params: Record<string, string | undefined>,
): void {
  const target = new URL(redirectUri);
  for (const [name, value] of Object.entries({ ...params, iss: issParameter(world, brand) }))
    if (value !== undefined) target.searchParams.set(name, value);
  ctx.set('Cache-Control', 'no-store');
  ctx.redirect(target.href);
}

/** 'wrong' names the issuer of a brand no sandbox serves, on the same origin: a mix-up a client must catch. */
function issParameter(world: World, brand: SandboxBrand): string | undefined {
  if (world.switches.iss === 'right') return issuer(world, brand.key);
  if (world.switches.iss === 'wrong') return issuer(world, 'no-such-brand');
  return undefined;
}

export function startAuthorization(world: World, brand: SandboxBrand, ctx: Context): void {
  let params: Record<string, string | undefined>;
  try {
    const query = queryParams(ctx);
    const names = [
      'response_type',
      'client_id',
      'redirect_uri',
      'scope',
      'state',
      'aud',
      'code_challenge',
      'code_challenge_method',
    ];
    params = Object.fromEntries(names.map((name) => [name, single(query, name)]));
  } catch (error) {
    if (error instanceof BadRequest) return sendErrorPage(ctx, 400, error.message);
    throw error;
  }
  const client = world.clients.find((candidate) => candidate.clientId === params.client_id);
  if (!client) return sendErrorPage(ctx, 400, 'Unknown client_id.');
  const redirectUri = params.redirect_uri;
  if (!redirectUri || !client.redirectUris.includes(redirectUri))
    return sendErrorPage(ctx, 400, 'redirect_uri is not one this app registered.');

  const state = params.state;
  const refuse = (error: string, description: string) =>
    redirectBack(world, brand, ctx, redirectUri, { error, error_description: description, state });
  if (params.response_type === undefined) return refuse('invalid_request', 'response_type is required');
  if (params.response_type !== 'code')
    return refuse('unsupported_response_type', 'only response_type=code is supported');
  if (params.code_challenge_method !== 'S256')
    return refuse('invalid_request', 'PKCE with code_challenge_method=S256 is required');
  if (!params.code_challenge || !S256_CHALLENGE.test(params.code_challenge))
    return refuse('invalid_request', 'code_challenge must be a base64url SHA-256 digest');
  if (params.aud !== fhirBase(world, brand.key))
    return refuse('invalid_request', `aud must be ${fhirBase(world, brand.key)}`);
  if (!state) return refuse('invalid_request', 'state is required');
  if (!params.scope) return refuse('invalid_scope', 'scope is required');
  const scopes = checkRequestedScope(params.scope, acceptsV2(brand));
  if (!scopes.ok) return refuse('invalid_scope', scopes.description);

  const request: AuthorizationRequest = {
    brandKey: brand.key,
    clientId: client.clientId,
    redirectUri,
    state,
    scope: scopes.scopes.join(' '),
    codeChallenge: params.code_challenge,
  };
  sendSignInPage(ctx, { ...signInPage(world, brand, request), requestId: world.grants.holdRequest(request) });
}

export async function decideAuthorization(world: World, brand: SandboxBrand, ctx: Context): Promise<void> {
  let form: URLSearchParams;
  try {
    form = await readForm(ctx);
  } catch (error) {
    if (error instanceof BadRequest) return sendErrorPage(ctx, 400, error.message);
    throw error;
  }
  const id = form.get('id') ?? '';
  const request = world.grants.request(id);
  if (!request || request.brandKey !== brand.key)
    return sendErrorPage(ctx, 400, 'This sign-in request has expired or was already used. Start again from the app.');

  const decision = form.get('decision');
  if (decision === 'deny' || (decision === 'allow' && world.switches.denyAll)) {
    world.grants.request(id, true);
    return redirectBack(world, brand, ctx, request.redirectUri, { error: 'access_denied', state: request.state });
  }
  if (decision !== 'allow') return sendErrorPage(ctx, 400, 'decision must be allow or deny.');
  const username = form.get('username') ?? '';
  const patient = world.patients.find(
    (p) => p.username === username && samePassword(form.get('password') ?? '', p.password),
  );
  if (!patient)
    return sendSignInPage(ctx, {
      ...signInPage(world, brand, request),
      requestId: id,
      username,
      error: 'Wrong username or password.',
    });
  world.grants.request(id, true);
  const code = world.grants.issueCode(request, patient.id);
  redirectBack(world, brand, ctx, request.redirectUri, { code, state: request.state });
}

function signInPage(world: World, brand: SandboxBrand, request: AuthorizationRequest) {
  return {
    brandName: brand.name,
    clientId: request.clientId,
    ...(clientNameOf(world, request.clientId) !== undefined && { clientName: clientNameOf(world, request.clientId) }),
    scope: request.scope,
    redirectUri: request.redirectUri,
    patients: world.patients,
  };
}

function samePassword(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** The registered name of a client (undefined when it has none). */
const clientNameOf = (world: World, clientId: string): string | undefined =>
  world.clients.find((client) => client.clientId === clientId)?.name;
