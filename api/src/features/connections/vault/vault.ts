// The token vault (docs/connecting.md, "Token vault"): a signed-in connection's tokens, stored only sealed, handed
// to the sync (never to an answer, a log, a metric or an event). An access token within 60 s of its expiry, or
// one a server has just refused, is refreshed first. At most one refresh per connection runs at a time: in this
// process callers share one promise, across replicas one claims the refresh in the store and the others wait
// for the tokens it stores. A rotated refresh token is stored before the new access token is handed out, so a
// crash never leaves the only copy of the current refresh token in a process that died. Every refresh seals both
// tokens under the current key, rotated or not, so old keys retire (rewrap.ts does the rest).
//
// Each sealed value is bound (the cipher's additional data) to its account, connection, field and the FHIR base URL
// it may be sent to, as the connection states them when the token is used: a value that does not open for them is
// never used, its tokens are deleted and the connection waits for its patient (REAUTHORIZATION_REQUIRED,
// `token_unreadable`). So is a grant the health system refuses (`invalid_grant`), and a refresh that names another
// patient than the connection's (`patient_mismatch`).
import { randomUUID } from 'node:crypto';
import type { Clock } from '#core/clock.js';
import {
  OAuthFailure,
  type GrantedTokens,
  type Registrations,
  type SmartDiscovery,
  type SmartOAuthClient,
} from '../../smart/index.js';
import type { ConnectionService } from '../lifecycle.js';
import type { TokenDisposal } from './disposal.js';
import { SealBroken, type Keyring } from './keyring.js';
import { sealContext, sealTokens, type Field, type TokenBinding } from './sealing.js';
import type { TokenRecord, TokenStore } from './store.js';

export type { TokenBinding };

/** An access token this close to its expiry is refreshed before use. */
export const REFRESH_EARLY_MS = 60_000;
/** How long a claimed refresh is its holder's (discovery's 10 s and the token request's 10 s, and a margin). */
export const REFRESH_LEASE_MS = 60_000;

/** Why a connection's tokens were given up: the word `connection.reauthorization_required` and the API show. */
export type ReauthorizationReason = 'invalid_grant' | 'patient_mismatch' | 'token_unreadable';

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
  registrations: Registrations;
  clock: Clock;
  /** Deletes and revokes what is not kept. */
  disposal: TokenDisposal;
  /** Moves a connection whose tokens were given up to REAUTHORIZATION_REQUIRED, with its event (lifecycle.ts). */
  connections: Pick<ConnectionService, 'requireReauthorization'>;
  /** Waits between looks at a refresh another replica holds. */
  pause?: (ms: number) => Promise<void>;
}

export class TokenVault {
  private readonly inFlight = new Map<string, Promise<string>>();
  private readonly replica = randomUUID();

  constructor(private readonly deps: TokenVaultDeps) {}

  /** Stores a connection's first (or reconnected) tokens. */
  async save(
    connectionId: string,
    accountId: string,
    brand: TokenRecord['brand'],
    tokens: GrantedTokens,
  ): Promise<void> {
    const binding = { accountId, fhirBaseUrl: brand.fhirBaseUrl };
    await this.deps.store.put({
      connectionId,
      accountId,
      brand,
      ...sealTokens(this.deps.keyring, connectionId, binding, tokens.accessToken, tokens.refreshToken),
      expiresAt: tokens.expiresAt ?? null,
      updatedAt: this.deps.clock.now(),
    });
  }

  /**
   * A usable access token for the connection `binding` describes; `refused`: the one a server just answered 401 to
   * (refreshed unless already replaced).
   */
  async accessToken(connectionId: string, binding: TokenBinding, refused?: string): Promise<string> {
    const record = await this.deps.store.get(connectionId);
    if (!record) throw new ReauthorizationRequired('the connection holds no tokens');
    const access = await this.open(record, 'access', binding);
    const expiring =
      record.expiresAt !== null && record.expiresAt.getTime() - this.deps.clock.now().getTime() <= REFRESH_EARLY_MS;
    if (!expiring && access !== refused) return access;
    const running = this.inFlight.get(connectionId);
    if (running) return running;
    const refresh = this.refresh(record, binding).finally(() => this.inFlight.delete(connectionId));
    this.inFlight.set(connectionId, refresh);
    return refresh;
  }

  /** Deletes the connection's tokens and revokes them at its health system (disposal.ts). */
  forget(connectionId: string): Promise<void> {
    return this.deps.disposal.forget(connectionId);
  }

  /** Revokes tokens that were never stored (disposal.ts). */
  discard(brand: TokenRecord['brand'], tokens: GrantedTokens): void {
    this.deps.disposal.discard(brand, tokens);
  }

  /** Settles when the revocations under way have (shutdown, tests). */
  settled(): Promise<void> {
    return this.deps.disposal.settled();
  }

  private async refresh(first: TokenRecord, binding: TokenBinding): Promise<string> {
    const holder = `${this.replica}/${randomUUID()}`;
    const giveUpAt = this.deps.clock.now().getTime() + 2 * REFRESH_LEASE_MS;
    let record = first;
    for (let look = 0; ; look++) {
      const now = this.deps.clock.now();
      const until = new Date(now.getTime() + REFRESH_LEASE_MS);
      if (await this.deps.store.claimRefresh(record.connectionId, record.version, holder, now, until))
        return this.refreshHeld(record, holder, binding);
      await (this.deps.pause ?? pause)(Math.min(50 * 2 ** look, 500));
      const current = await this.deps.store.get(record.connectionId);
      if (!current) throw new ReauthorizationRequired('the connection holds no tokens');
      // Another replica stored new tokens: they are the ones to use.
      if (current.version !== record.version) return this.open(current, 'access', binding);
      if (this.deps.clock.now().getTime() > giveUpAt)
        throw new Error('another replica holds the refresh of this connection and has not finished it');
      record = current;
    }
  }

  private async refreshHeld(record: TokenRecord, holder: string, binding: TokenBinding): Promise<string> {
    const id = record.connectionId;
    const registration = this.deps.registrations.for(record.brand);
    if (!registration) {
      // A configuration change, not the patient's doing: the sync fails until the registration is back.
      await this.deps.store.release(id, holder);
      throw new Error(`no client registration matches the brand ${record.brand.id} any more`);
    }
    let refreshToken: string;
    let tokens: GrantedTokens;
    try {
      if (!record.refresh) throw new OAuthFailure('invalid_grant', 'the health system granted no refresh token');
      refreshToken = await this.open(record, 'refresh', binding);
      const server = await this.deps.discovery.discover(binding.fhirBaseUrl);
      tokens = await this.deps.oauth.refresh(server, registration, refreshToken);
    } catch (error) {
      await this.deps.store.release(id, holder);
      // An answer refused for its content (not Bearer) still granted tokens: they are revoked.
      if (error instanceof OAuthFailure && error.granted) this.deps.disposal.discard(record.brand, error.granted);
      // Refused: the tokens go, unless a reconnect stored new ones meanwhile (then they are the ones to keep).
      if (error instanceof OAuthFailure && error.error === 'invalid_grant') await this.giveUp(record, 'invalid_grant');
      throw error;
    }
    if (tokens.patient !== undefined && tokens.patient !== binding.patient) {
      // Another patient's grant: nothing of it is used or kept, and neither is what the connection held.
      await this.deps.store.release(id, holder);
      // Nothing of either grant is kept: what the refresh handed out, and the refresh token it was asked with.
      this.deps.disposal.discard(record.brand, tokens);
      this.deps.disposal.revokeInBackground(record.brand, refreshToken, 'refresh_token');
      await this.giveUp(record, 'patient_mismatch');
    }
    // Stored before use: the rotated refresh token must outlive this process. Both are sealed under the current key.
    const sealed = {
      ...sealTokens(this.deps.keyring, id, binding, tokens.accessToken, tokens.refreshToken ?? refreshToken),
      expiresAt: tokens.expiresAt ?? null,
    };
    if (!(await this.deps.store.refreshed(id, holder, sealed, this.deps.clock.now())))
      throw new Error('the refresh outlived its claim; its tokens were not stored');
    return tokens.accessToken;
  }

  /** The value of `field`, opened for `binding`; a broken seal gives the tokens up (ReauthorizationRequired). */
  private async open(record: TokenRecord, field: Field, binding: TokenBinding): Promise<string> {
    const sealed = record[field]!;
    try {
      return this.deps.keyring.open(sealed, sealContext(record.connectionId, field, binding, sealed));
    } catch (error) {
      if (error instanceof SealBroken) return this.giveUp(record, 'token_unreadable');
      throw new TokensUnreadable((error as Error).message);
    }
  }

  /**
   * Deletes the tokens as read (a reconnect's newer ones stay) and moves the connection to REAUTHORIZATION_REQUIRED
   * with `reason`.
   */
  private async giveUp(record: TokenRecord, reason: ReauthorizationReason): Promise<never> {
    if (await this.deps.store.delete(record.connectionId, record.version))
      await this.deps.connections.requireReauthorization(record.accountId, record.connectionId, reason);
    throw new ReauthorizationRequired(
      reason === 'patient_mismatch'
        ? 'the health system named another patient than the connection’s'
        : reason === 'token_unreadable'
          ? 'the connection’s tokens do not open for it'
          : 'the health system refused the connection’s grant',
    );
  }
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
