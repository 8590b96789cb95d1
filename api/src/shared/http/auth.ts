// Bearer credentials. requireKey(surface) authenticates, requireScope(scope) authorizes the operation; both
// describe themselves for /openapi.json. Keys are looked up by hash; the key itself is never logged.
import { timingSafeEqual, createHash } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import { hashKey, kindOf, type ApiKeyRecord, type KeyKind } from './keys.js';
import { AppError } from './errors.js';
import type { OperationPatch } from './openapi.js';
import type { Scope } from './scopes.js';

export type Surface = 'platform' | 'sdk-publishable' | 'sdk-secret';

const KIND_OF_SURFACE: Record<Surface, KeyKind> = { platform: 'sk', 'sdk-publishable': 'pk', 'sdk-secret': 'ak' };
const SECURITY_OF_SURFACE: Record<Surface, string> = {
  platform: 'platformKey',
  'sdk-publishable': 'publishableKey',
  'sdk-secret': 'appSecretKey',
};

export interface Principal {
  keyId: string;
  kind: KeyKind;
  accountId: string;
  appId: string | null;
  scopes: ReadonlySet<string>;
}

/** Resolves a presented key to its live record (null when unknown or revoked). */
export type KeyLookup = (hash: string) => Promise<ApiKeyRecord | null>;

/** Whether a customer account (or an app) is ACTIVE, its credentials working; from a replicated cache. */
export type ActiveCheck = (accountId: string) => Promise<boolean>;

/**
 * The same three answers as the caches hold them now, undefined for what is not cached: when all are, a request is
 * authenticated at once, without a promise (the polled reads of the fast path are mostly this).
 */
export interface CachedCredentials {
  key(hash: string): ApiKeyRecord | null | undefined;
  accountActive(accountId: string): boolean | undefined;
  appActive(appId: string): boolean | undefined;
}

type Documented = Middleware & { openapi: OperationPatch };

export const ACCESS_DENIED_DETAIL = 'The credential is not allowed to perform this operation on this resource.';

function unauthorized(detail: string, tokenSent: boolean): AppError {
  const challenge = tokenSent ? 'Bearer realm="portico", error="invalid_token"' : 'Bearer realm="portico"';
  return new AppError('UNAUTHORIZED', detail, {}, { 'WWW-Authenticate': challenge });
}

/** The one 401 of an unusable key: on the SDK surface it names suspension too, which the platform answers with 403. */
const unusableKey = (surface: Surface) =>
  unauthorized(
    surface === 'platform' ? 'The API key is unknown or revoked.' : 'The API key is unknown, revoked or suspended.',
    true,
  );

const BEARER = /^Bearer +([\x21-\x7e]+) *$/i;

/** The bearer value, undefined when there is no Authorization header; 401 when it is not a Bearer credential. */
function bearerOf(ctx: Context): string | undefined {
  const header = ctx.get('Authorization');
  if (header === '') return undefined;
  const match = BEARER.exec(header);
  if (!match) throw unauthorized('The Authorization header must be "Bearer <key>".', true);
  return match[1];
}

/** Why a presented credential does not authenticate. */
export type Refusal = 'missing' | 'not-bearer' | 'wrong-kind' | 'unusable' | 'account-suspended';

/**
 * The one credential check, for the Koa routes (requireKey) and the node:http fast path alike: the principal
 * of a usable key of `kind` in `authorization` (the header's value, '' or undefined when absent), or why not.
 * Usable: known, not revoked, of that kind, its account ACTIVE and, for an app's key, its app ACTIVE.
 */
export type Authenticate = (
  authorization: string | undefined,
  kind: KeyKind,
) => Principal | Refusal | Promise<Principal | Refusal>;

export function createAuthenticate(
  lookup: KeyLookup,
  accountActive: ActiveCheck,
  appActive: ActiveCheck,
  cached?: CachedCredentials,
): Authenticate {
  async function judge(hash: string, kind: KeyKind): Promise<Principal | Refusal> {
    const record = await lookup(hash);
    if (!record || record.revokedAt !== null || record.kind !== kind) return 'unusable';
    if (!(await accountActive(record.accountId))) return 'account-suspended';
    if (record.appId !== null && !(await appActive(record.appId))) return 'unusable';
    return principalFor(record);
  }
  /** judge() from what is cached, in the same order; undefined as soon as something it needs is not. */
  function judgeCached(cached: CachedCredentials, hash: string, kind: KeyKind): Principal | Refusal | undefined {
    const record = cached.key(hash);
    if (record === undefined) return undefined;
    if (!record || record.revokedAt !== null || record.kind !== kind) return 'unusable';
    const accountActive = cached.accountActive(record.accountId);
    if (accountActive !== true) return accountActive === false ? 'account-suspended' : undefined;
    if (record.appId === null) return principalFor(record);
    const appActive = cached.appActive(record.appId);
    if (appActive !== true) return appActive === false ? 'unusable' : undefined;
    return principalFor(record);
  }
  return function authenticate(authorization, kind) {
    if (authorization === undefined || authorization === '') return 'missing';
    const key = BEARER.exec(authorization)?.[1];
    if (key === undefined) return 'not-bearer';
    if (kindOf(key) !== kind) return 'wrong-kind';
    const hash = hashKey(key);
    return (cached && judgeCached(cached, hash, kind)) ?? judge(hash, kind);
  };
}

export function createAuth(authenticate: Authenticate) {
  function requireKey(surface: Surface): Documented {
    const expected = KIND_OF_SURFACE[surface];
    const middleware = async function requireKeyMiddleware(ctx: Context, next: () => Promise<unknown>) {
      const outcome = await authenticate(ctx.get('Authorization'), expected);
      if (typeof outcome !== 'string') {
        ctx.state.principal = outcome;
        return next();
      }
      if (outcome === 'missing')
        throw unauthorized('An API key is required: send "Authorization: Bearer <key>".', false);
      if (outcome === 'not-bearer') throw unauthorized('The Authorization header must be "Bearer <key>".', true);
      if (outcome === 'wrong-kind') throw unauthorized(`This operation takes a ${expected}_ key.`, true);
      // On the SDK surface an unknown or revoked key, a suspended account's and a suspended app's get the
      // same answer, so that a key's answer tells nothing of what it belongs to (docs/api.md, Abuse limits). The
      // platform keeps 403 for a suspended account: its keys are secret, their holder the account itself.
      if (outcome === 'account-suspended' && surface === 'platform')
        throw new AppError('PLATFORM_ACCESS_DENIED', ACCESS_DENIED_DETAIL);
      throw unusableKey(surface);
    } as Documented;
    middleware.openapi = { security: SECURITY_OF_SURFACE[surface] };
    return middleware;
  }
  return { requireKey };
}

// Records come from a cache, so the same record object serves many requests: build its principal once.
const principals = new WeakMap<ApiKeyRecord, Principal>();
export function principalFor(record: ApiKeyRecord): Principal {
  let principal = principals.get(record);
  if (!principal) {
    principal = {
      keyId: record.keyId,
      kind: record.kind,
      accountId: record.accountId,
      appId: record.appId,
      scopes: new Set(record.scopes),
    };
    principals.set(record, principal);
  }
  return principal;
}

export function requireScope(scope: Scope): Documented {
  const middleware = async function requireScopeMiddleware(ctx: Context, next: () => Promise<unknown>) {
    if (!principalOf(ctx).scopes.has(scope)) {
      throw new AppError('PLATFORM_ACCESS_DENIED', ACCESS_DENIED_DETAIL, { requiredScope: scope });
    }
    await next();
  } as Documented;
  middleware.openapi = { scopes: [scope] };
  return middleware;
}

export function principalOf(ctx: Context): Principal {
  const principal = ctx.state.principal as Principal | undefined;
  if (!principal) throw new Error('principalOf() used on a route without requireKey()');
  return principal;
}

/** The admin surface: a constant-time comparison with PORTICO_ADMIN_TOKEN. */
export function requireAdminToken(token: string): Documented {
  const expected = createHash('sha256').update(token).digest();
  const middleware = async function requireAdminMiddleware(ctx: Context, next: () => Promise<unknown>) {
    const presented = bearerOf(ctx);
    if (presented === undefined) throw unauthorized('The admin token is required.', false);
    if (!timingSafeEqual(createHash('sha256').update(presented).digest(), expected)) {
      throw unauthorized('The admin token is not valid.', true);
    }
    ctx.state.principal = {
      keyId: 'admin',
      kind: 'sk',
      accountId: '',
      appId: null,
      scopes: new Set(),
    } satisfies Principal;
    await next();
  } as Documented;
  middleware.openapi = { security: 'adminToken' };
  return middleware;
}
