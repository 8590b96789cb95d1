// Tenant administration: customer accounts, their secret keys, their apps. Shared by the admin HTTP
// surface and `portico admin …`.
import { randomUUID } from 'node:crypto';
import type { AccountStore, CustomerAccount } from '../accounts/index.js';
import type { App, AppStore } from '../apps/index.js';
import type { AuthorizationService } from '../authz/index.js';
import type { Clock } from '#core/clock.js';
import { generateKey, hashKey, type KeyKind } from '../../shared/http/keys.js';
import type { ApiKeyStore } from '../credentials/index.js';
import { badRequest, notFound, type FieldError } from '../../shared/http/errors.js';
import { CursorCodec } from '../../shared/http/cursor.js';
import type { ApiKeyRecord } from '../../shared/http/keys.js';
import type { KeysetPage, KeysetPosition } from '../../shared/infra/keyset.js';
import { isLoincCode, sensitivityCodes } from '../clinical/index.js';
import type { CreateKey, Grants } from './schema.js';
import { changing, type Generations } from '../../shared/infra/generations.js';

/** What admin needs of the connections' syncs: those paused while an account or app was suspended resume. */
export interface PausedSyncs {
  resumeAccount(accountId: string, now: Date): Promise<void>;
}

export interface AdminServiceDeps {
  accounts: AccountStore;
  keys: ApiKeyStore;
  apps: AppStore;
  authz: AuthorizationService;
  /** Tokens of what the gateway caches (shared/infra/generations.ts). */
  generations?: Generations;
  /** Signs the lists' cursors. */
  cursors: CursorCodec;
  clock: Clock;
  /** An account, or one of its apps, is active again: the syncs paused while it was not resume (features/connections). */
  syncs?: PausedSyncs;
}

/** A page of an admin list and the cursor of the next, when there is one. */
export interface AdminPage<T> {
  items: T[];
  nextCursor: string | null;
}

/** The admin lists' cursors are bound to the list and its account ('*' for the list of accounts). */
const EVERY_ACCOUNT = '*';

/**
 * The admin lists' cursors, under a fixed key rather than PORTICO_CURSOR_SECRET: `portico admin list-…` runs one
 * process per page (and without the secret each would make its own), and a forged admin cursor could show the
 * admin nothing the admin token cannot already see. The key still makes a mistyped or foreign cursor a 400.
 */
export const ADMIN_CURSORS = new CursorCodec('portico-admin-lists');

export const memberTuple = (accountId: string, keyId: string) => ({
  object: `customer_account:${accountId}`,
  relation: 'member',
  subject: `api_key:${keyId}`,
});

export class AdminService {
  constructor(private readonly deps: AdminServiceDeps) {}

  async createAccount(name: string): Promise<CustomerAccount> {
    const account: CustomerAccount = { id: randomUUID(), name, status: 'ACTIVE', createdAt: this.deps.clock.now() };
    await this.deps.accounts.insert(account);
    return account;
  }

  /** Suspends or reactivates an account: every credential of a suspended account is refused (shared/http/auth.ts). */
  async setAccountStatus(id: string, status: CustomerAccount['status']): Promise<CustomerAccount> {
    const account = await this.deps.accounts.setStatus(id, status, this.deps.clock.now());
    if (!account) throw notFound('customer account');
    if (status === 'ACTIVE') await this.deps.syncs?.resumeAccount(account.id, this.deps.clock.now());
    return account;
  }

  /** Issues a secret platform key; the returned `key` is never stored and cannot be shown again. */
  async issueKey(accountId: string, input: CreateKey): Promise<{ id: string; key: string; scopes: string[] }> {
    if (!(await this.deps.accounts.get(accountId))) throw notFound('customer account');
    const keyId = randomUUID();
    const key = await this.storeKey('sk', keyId, accountId, null, input.scopes, input.name ?? null);
    // Membership is what the relation-tuple check follows from a key to its tenant's resources.
    await this.deps.authz.grant(accountId, memberTuple(accountId, keyId));
    return { id: keyId, key, scopes: input.scopes };
  }

  async revokeKey(keyId: string): Promise<void> {
    const revoked = await this.deps.keys.revoke(keyId, this.deps.clock.now());
    if (!revoked) throw notFound('API key');
    if (revoked.kind === 'sk') await this.deps.authz.revoke(revoked.accountId, memberTuple(revoked.accountId, keyId));
  }

  async createApp(
    accountId: string,
    name: string,
    grants: Grants,
    redirectUris: string[] = [],
  ): Promise<{ app: App; publishableKey: string; publishableKeyId: string; secretKey: string; secretKeyId: string }> {
    if (!(await this.deps.accounts.get(accountId))) throw notFound('customer account');
    checkGrants(grants);
    checkRedirectUris(redirectUris);
    const now = this.deps.clock.now();
    const app: App = {
      id: randomUUID(),
      accountId,
      name,
      grants,
      status: 'ACTIVE',
      redirectUris,
      createdAt: now,
      updatedAt: now,
      version: 1,
    };
    await this.deps.apps.insert(app);
    const publishableKeyId = randomUUID();
    const secretKeyId = randomUUID();
    const publishableKey = await this.storeKey('pk', publishableKeyId, accountId, app.id, [], `${name} (publishable)`);
    const secretKey = await this.storeKey(
      'ak',
      secretKeyId,
      accountId,
      app.id,
      ['observation:read'],
      `${name} (secret)`,
    );
    return { app, publishableKey, publishableKeyId, secretKey, secretKeyId };
  }

  async updateApp(
    id: string,
    changes: { status?: App['status']; grants?: Grants; redirectUris?: string[] },
  ): Promise<App> {
    if (changes.grants) checkGrants(changes.grants);
    if (changes.redirectUris) checkRedirectUris(changes.redirectUris);
    const app = await changing(this.deps.generations, [`app:${id}`], () =>
      this.deps.apps.update(id, changes, this.deps.clock.now()),
    );
    if (!app) throw notFound('app');
    if (changes.status === 'ACTIVE') await this.deps.syncs?.resumeAccount(app.accountId, this.deps.clock.now());
    return app;
  }

  /** Every customer account, newest first. */
  listAccounts(limit: number, cursor?: string): Promise<AdminPage<CustomerAccount>> {
    return this.page(
      'admin/accounts',
      EVERY_ACCOUNT,
      cursor,
      (after) => this.deps.accounts.list(limit, after),
      (a) => a,
    );
  }

  /** An account's apps, newest first (never their keys: those are shown once, when made). */
  async listApps(accountId: string, limit: number, cursor?: string): Promise<AdminPage<App>> {
    if (!(await this.deps.accounts.get(accountId))) throw notFound('customer account');
    return this.page(
      'admin/apps',
      accountId,
      cursor,
      (after) => this.deps.apps.listByAccount(accountId, limit, after),
      (a) => a,
    );
  }

  /** An account's keys (its own sk_ and its apps' pk_ and ak_, revoked ones too), newest first: never the keys. */
  async listKeys(accountId: string, limit: number, cursor?: string): Promise<AdminPage<ApiKeyRecord>> {
    if (!(await this.deps.accounts.get(accountId))) throw notFound('customer account');
    return this.page(
      'admin/api-keys',
      accountId,
      cursor,
      (after) => this.deps.keys.listByAccount(accountId, limit, after),
      (k) => ({ createdAt: k.createdAt, id: k.keyId }),
    );
  }

  private async page<T>(
    route: string,
    accountId: string,
    cursor: string | undefined,
    load: (after?: KeysetPosition) => Promise<KeysetPage<T>>,
    positionOf: (item: T) => KeysetPosition,
  ): Promise<AdminPage<T>> {
    const binding = { route, accountId };
    const { items, hasMore } = await load(
      cursor === undefined ? undefined : this.deps.cursors.decodePosition(binding, cursor),
    );
    const last = items.at(-1);
    return { items, nextCursor: hasMore && last ? this.deps.cursors.encodePosition(binding, positionOf(last)) : null };
  }

  private async storeKey(
    kind: KeyKind,
    keyId: string,
    accountId: string,
    appId: string | null,
    scopes: string[],
    name: string | null,
  ): Promise<string> {
    const key = generateKey(kind);
    await this.deps.keys.insert(hashKey(key), {
      keyId,
      kind,
      accountId,
      appId,
      name,
      scopes,
      createdAt: this.deps.clock.now(),
      revokedAt: null,
    });
    return key;
  }
}

/** What the schema cannot say of redirect URIs: absolute, https (or http on this machine), no fragment. */
function checkRedirectUris(uris: string[]): void {
  const errors = uris.flatMap((uri, index) => {
    const problem = redirectUriProblem(uri);
    return problem ? [{ in: 'body' as const, name: `redirectUris.${index}`, detail: problem }] : [];
  });
  if (errors.length > 0) throw badRequest('The redirect URIs cannot all be used.', errors);
}

export function redirectUriProblem(uri: string): string | undefined {
  if (!URL.canParse(uri)) return 'is not an absolute URL';
  const url = new URL(uri);
  if (url.hash !== '' || uri.includes('#')) return 'must not have a fragment';
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '127.0.0.1')) return undefined;
  return 'must be https:, or http: on localhost or 127.0.0.1';
}

/** What the schema cannot say of grants: LOINC check digits, and sensitivity codes of v3-ActCode's policies. */
function checkGrants(grants: Grants): void {
  const errors: FieldError[] = [];
  for (const code of grants.loincCodes)
    if (code !== '*' && !isLoincCode(code))
      errors.push({
        in: 'body',
        name: 'grants.loincCodes',
        detail: `${code} is not a LOINC code (its check digit does not match)`,
      });
  const known = sensitivityCodes();
  for (const code of grants.sensitivity)
    if (!known.has(code))
      errors.push({
        in: 'body',
        name: 'grants.sensitivity',
        detail: `${code} is not a v3-ActCode information sensitivity code (e.g. ETH, HIV, PSY, SUD, STD)`,
      });
  if (errors.length > 0) throw badRequest('The grants name codes that do not exist.', errors);
}
