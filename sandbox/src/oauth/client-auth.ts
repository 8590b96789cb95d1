// Client authentication at the token and revocation endpoints, exactly as each client is registered: a public
// client names itself, a symmetric one uses HTTP Basic and nothing else, an asymmetric one signs a short-lived,
// single-use JWT (SMART App Launch 2.2 "confidential asymmetric"). Presenting another method, or two, is refused,
// as a strict EHR refuses it.
import { createHash, timingSafeEqual, type JsonWebKey } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import type { Context } from 'koa';
import type { ClientAuthMethod } from '../stats.js';
import type { SandboxClient } from '../types.js';
import { advertisedOrigin, endpoints, issuer, type World } from '../world.js';
import { single } from '../http.js';
import { OAuthError } from './errors.js';

export const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const MAX_ASSERTION_LIFETIME_S = 300;

/** Which method the request presents, from its shape alone (recorded in stats before anything is checked). */
export function presentedMethod(ctx: Context, form: URLSearchParams): ClientAuthMethod {
  const basic = /^basic /i.test(ctx.get('authorization'));
  const assertion = form.has('client_assertion') || form.has('client_assertion_type');
  if (basic && !assertion && !form.has('client_secret')) return 'client_secret_basic';
  if (assertion && !basic && !form.has('client_secret')) return 'private_key_jwt';
  if (!basic && !assertion && !form.has('client_secret') && form.has('client_id')) return 'none';
  return 'unknown';
}

const invalidClient = (description: string) => new OAuthError('invalid_client', description, 401);

/** The authenticated client, or an invalid_client error (401). */
export async function authenticateClient(
  world: World,
  brandKey: string,
  ctx: Context,
  form: URLSearchParams,
): Promise<SandboxClient> {
  if (form.has('client_secret')) throw invalidClient('client_secret in the body is not accepted; use HTTP Basic');
  const method = presentedMethod(ctx, form);
  const clientId = claimedClientId(ctx, form, method);
  const client = world.clients.find((candidate) => candidate.clientId === clientId);
  if (!client) throw invalidClient('unknown client');
  if (client.auth.method !== method)
    throw invalidClient(`this client authenticates with ${client.auth.method}, not ${method}`);
  const bodyId = single(form, 'client_id');
  if (bodyId !== undefined && bodyId !== client.clientId) throw invalidClient('client_id does not match');

  if (client.auth.method === 'client_secret_basic') {
    const secret = basicCredentials(ctx)?.secret ?? '';
    if (!sameSecret(secret, client.auth.secret)) throw invalidClient('wrong client secret');
  } else if (client.auth.method === 'private_key_jwt') {
    await verifyAssertion(world, brandKey, form, client.clientId, client.auth.jwks);
  }
  return client;
}

function claimedClientId(ctx: Context, form: URLSearchParams, method: ClientAuthMethod): string | undefined {
  if (method === 'client_secret_basic') return basicCredentials(ctx)?.id;
  if (method === 'none') return single(form, 'client_id');
  if (method === 'private_key_jwt') {
    try {
      return decodeJwt(single(form, 'client_assertion') ?? '').iss;
    } catch {
      throw invalidClient('client_assertion is not a JWT');
    }
  }
  throw invalidClient('present exactly one client authentication method');
}

/** RFC 6749 §2.3.1: id and secret are each form-urlencoded before they are joined with ":" and base64ed. */
function basicCredentials(ctx: Context): { id: string; secret: string } | undefined {
  const match = /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(ctx.get('authorization'));
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  const unescape = (value: string) => {
    try {
      return decodeURIComponent(value.replace(/\+/g, ' '));
    } catch {
      return undefined;
    }
  };
  const [id, secret] = [unescape(decoded.slice(0, colon)), unescape(decoded.slice(colon + 1))];
  return id === undefined || secret === undefined ? undefined : { id, secret };
}

/** Compared by their hashes, so neither the length nor the content leaks through timing. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

async function verifyAssertion(
  world: World,
  brandKey: string,
  form: URLSearchParams,
  clientId: string,
  keys: JsonWebKey[],
): Promise<void> {
  if (single(form, 'client_assertion_type') !== ASSERTION_TYPE)
    throw invalidClient(`client_assertion_type must be ${ASSERTION_TYPE}`);
  const now = world.now();
  let payload;
  try {
    ({ payload } = await jwtVerify(single(form, 'client_assertion') ?? '', createLocalJWKSet({ keys }), {
      algorithms: ['ES384', 'RS384'],
      issuer: clientId,
      subject: clientId,
      // As advertised and as served: they differ only while endpointHostnames renames the host.
      audience: [world.origin, advertisedOrigin(world, brandKey)].flatMap((origin) => [
        endpoints(world, brandKey, origin).token_endpoint,
        issuer(world, brandKey, origin),
      ]),
      requiredClaims: ['exp', 'jti'],
      currentDate: new Date(now),
    }));
  } catch (error) {
    throw invalidClient(`client_assertion refused: ${(error as Error).message}`);
  }
  const exp = payload.exp!;
  if (exp > now / 1000 + MAX_ASSERTION_LIFETIME_S)
    throw invalidClient('client_assertion expires more than 5 minutes from now');
  if (typeof payload.jti !== 'string' || !world.grants.firstUseOfAssertion(clientId, payload.jti, exp * 1000))
    throw invalidClient('client_assertion jti was used before');
}
