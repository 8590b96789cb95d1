// The token vault (docs/connecting.md, "Token vault"): a signed-in connection's tokens, stored only sealed, handed
// to the sync (never to an answer, a log, a metric or an event). An access token within 60 s of its expiry, or
// one a server has just refused, is refreshed first. At most one refresh per connection runs at a time: in this
// process callers share one promise, across replicas one claims the refresh in the store and the others wait
// for the tokens it stores. A rotated refresh token is stored before the new access token is handed out, so a
// crash never leaves the only copy of the current refresh token in a process that died. A refused grant
// (`invalid_grant`) ends the tokens and marks the connection REAUTHORIZATION_REQUIRED.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../../../core/src/clock.js';
import {
  OAuthFailure,
  type GrantedTokens,
  type Registrations,
  type SmartDiscovery,
  type SmartOAuthClient,
} from '../smart/index.js';
import type { Keyring } from './keyring.js';
import type { TokenRecord, TokenStore } from './store.js';

/** An access token this close to its expiry is refreshed before use. */
export const REFRESH_EARLY_MS = 60_000;
/** How long a claimed refresh is its holder's (discovery's 10 s and the token request's 10 s, and a margin). */
export const REFRESH_LEASE_MS = 60_000;

/** The connection's grant is gone: only the patient signing in again (a reconnect) renews it. */
export class ReauthorizationRequired extends Error {
  override name = 'ReauthorizationRequired';
}

/** The stored tokens cannot be opened: their key is no longer in PORTICO_TOKEN_KEYS (put it back). */
export class TokensUnreadable extends Error {
  override name = 'TokensUnreadable';
}

export interface TokenVaultDeps {
  store: TokenStore;
  keyring: Keyring;
  oauth: SmartOAuthClient;
  discovery: SmartDiscovery;
  registrations: () => Registrations;
  clock: Clock;
  /** Told when a health system refused a connection's grant (it moves the connection, with its event). */
  onGrantRefused: (record: TokenRecord) => Promise<void>;
  /** Waits between looks at a refresh another replica holds. */
  pause?: (ms: number) => Promise<void>;
}

const sealContext = (connectionId: string, field: 'access' | 'refresh') => `${connectionId}/${field}`;

export class TokenVault {
  private readonly inFlight = new Map<string, Promise<string>>();
  private readonly revocations = new Set<Promise<void>>();
  private readonly replica = randomUUID();

  constructor(private readonly deps: TokenVaultDeps) {}

  /** Stores a connection's first (or reconnected) tokens. */
  async save(
    connectionId: string,
    accountId: string,
    brand: TokenRecord['brand'],
    tokens: GrantedTokens,
  ): Promise<void> {
    await this.deps.store.put({
      connectionId,
      accountId,
      brand,
      ...this.sealed(connectionId, tokens, null),
      updatedAt: this.deps.clock.now(),
    });
  }

  /** A usable access token; `refused`: the one a server just answered 401 to (refreshed unless already replaced). */
  async accessToken(connectionId: string, refused?: string): Promise<string> {
    const record = await this.deps.store.get(connectionId);
    if (!record) throw new ReauthorizationRequired('the connection holds no tokens');
    const access = this.open(record, 'access');
    const expiring =
      record.expiresAt !== null && record.expiresAt.getTime() - this.deps.clock.now().getTime() <= REFRESH_EARLY_MS;
    if (!expiring && access !== refused) return access;
    const running = this.inFlight.get(connectionId);
    if (running) return running;
    const refresh = this.refresh(record).finally(() => this.inFlight.delete(connectionId));
    this.inFlight.set(connectionId, refresh);
    return refresh;
  }

  /**
   * Deletes the connection's tokens, then revokes them at its health system when it can: best effort, in the
   * background (the revocation has its own 10 s deadline; the request that revoked the connection does not wait).
   */
  async forget(connectionId: string): Promise<void> {
    const record = await this.deps.store.get(connectionId);
    if (!record) return;
    await this.deps.store.delete(connectionId);
    const revocation = this.revokeAtHealthSystem(record).finally(() => this.revocations.delete(revocation));
    this.revocations.add(revocation);
  }

  /** Settles when the revocations under way have (shutdown, tests). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.revocations]);
  }

  private async revokeAtHealthSystem(record: TokenRecord): Promise<void> {
    let token: string;
    try {
      token = this.open(record, record.refresh ? 'refresh' : 'access');
    } catch {
      return; // unreadable: nothing to revoke with
    }
    await this.revoke(record.brand, token, record.refresh ? 'refresh_token' : 'access_token');
  }

  /** Best effort, as documented: the tokens are gone from Portico whatever the health system answers. */
  private async revoke(brand: TokenRecord['brand'], token: string, hint: string): Promise<void> {
    const registration = this.deps.registrations().for(brand);
    if (!registration) return;
    try {
      const server = await this.deps.discovery.discover(brand.fhirBaseUrl);
      await this.deps.oauth.revoke(server, registration, token, hint);
    } catch {
      // Nothing else to do: the health system's grant lapses on its own terms.
    }
  }

  private async refresh(first: TokenRecord): Promise<string> {
    const holder = `${this.replica}/${randomUUID()}`;
    const giveUpAt = this.deps.clock.now().getTime() + 2 * REFRESH_LEASE_MS;
    let record = first;
    for (let look = 0; ; look++) {
      const now = this.deps.clock.now();
      const until = new Date(now.getTime() + REFRESH_LEASE_MS);
      if (await this.deps.store.claimRefresh(record.connectionId, record.version, holder, now, until))
        return this.refreshHeld(record, holder);
      await (this.deps.pause ?? pause)(Math.min(50 * 2 ** look, 500));
      const current = await this.deps.store.get(record.connectionId);
      if (!current) throw new ReauthorizationRequired('the connection holds no tokens');
      // Another replica stored new tokens: they are the ones to use.
      if (current.version !== record.version) return this.open(current, 'access');
      if (this.deps.clock.now().getTime() > giveUpAt)
        throw new Error('another replica holds the refresh of this connection and has not finished it');
      record = current;
    }
  }

  private async refreshHeld(record: TokenRecord, holder: string): Promise<string> {
    const id = record.connectionId;
    const registration = this.deps.registrations().for(record.brand);
    if (!registration) {
      // A configuration change, not the patient's doing: the sync fails until the registration is back.
      await this.deps.store.release(id, holder);
      throw new Error(`no client registration matches the brand ${record.brand.id} any more`);
    }
    if (!record.refresh) {
      await this.deps.store.release(id, holder);
      await this.refused(record);
    }
    let tokens: GrantedTokens;
    try {
      const server = await this.deps.discovery.discover(record.brand.fhirBaseUrl);
      const refreshToken = this.open(record, 'refresh');
      tokens = await this.deps.oauth.refresh(server, registration, refreshToken);
    } catch (error) {
      // Refused: the tokens go, unless a reconnect stored new ones meanwhile (then they are the ones to keep).
      if (
        error instanceof OAuthFailure &&
        error.error === 'invalid_grant' &&
        (await this.deps.store.delete(id, record.version))
      )
        await this.refused(record);
      await this.deps.store.release(id, holder);
      throw error;
    }
    // Stored before use: the rotated refresh token must outlive this process.
    if (!(await this.deps.store.refreshed(id, holder, this.sealed(id, tokens, record.refresh), this.deps.clock.now())))
      throw new Error('the refresh outlived its claim; its tokens were not stored');
    return tokens.accessToken;
  }

  /** Revokes tokens that were never stored (a reconnect refused for another patient), in the background. */
  discard(brand: TokenRecord['brand'], tokens: GrantedTokens): void {
    const revocation = this.revoke(
      brand,
      tokens.refreshToken ?? tokens.accessToken,
      tokens.refreshToken ? 'refresh_token' : 'access_token',
    ).finally(() => this.revocations.delete(revocation));
    this.revocations.add(revocation);
  }

  private open(record: TokenRecord, field: 'access' | 'refresh'): string {
    try {
      return this.deps.keyring.open(record[field]!, sealContext(record.connectionId, field));
    } catch (error) {
      throw new TokensUnreadable((error as Error).message);
    }
  }

  private async refused(record: TokenRecord): Promise<never> {
    await this.deps.onGrantRefused(record);
    throw new ReauthorizationRequired('the health system refused the connection’s grant');
  }

  private sealed(connectionId: string, tokens: GrantedTokens, keptRefresh: TokenRecord['refresh']) {
    const { keyring } = this.deps;
    return {
      access: keyring.seal(tokens.accessToken, sealContext(connectionId, 'access')),
      refresh: tokens.refreshToken
        ? keyring.seal(tokens.refreshToken, sealContext(connectionId, 'refresh'))
        : keptRefresh,
      expiresAt: tokens.expiresAt ?? null,
    };
  }
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
