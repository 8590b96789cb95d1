// Giving tokens up (docs/connecting.md, "Token vault"): a revoked connection's tokens are deleted, then revoked at
// its health system when Portico can; tokens that were never stored (a sign-in refused after its exchange) are
// revoked too. Revocation is best effort, in the background, with its own 10 s deadline (the OAuth client's): the
// request that revoked the connection does not wait for it, and the tokens are gone from Portico whatever the
// health system answers. Apart from the vault, which refreshes tokens, so that what revokes a connection
// (lifecycle.ts) needs nothing of what uses one.
import type { GrantedTokens, Registrations, SmartDiscovery, SmartOAuthClient } from '../../smart/index.js';
import type { Keyring } from './keyring.js';
import { recordBinding, sealContext } from './sealing.js';
import type { TokenRecord, TokenStore } from './store.js';

export interface TokenDisposalDeps {
  store: TokenStore;
  keyring: Keyring;
  oauth: SmartOAuthClient;
  discovery: SmartDiscovery;
  registrations: Registrations;
}

export class TokenDisposal {
  private readonly revocations = new Set<Promise<void>>();

  constructor(private readonly deps: TokenDisposalDeps) {}

  /** Deletes the connection's tokens, then revokes them at its health system in the background. */
  async forget(connectionId: string): Promise<void> {
    const record = await this.deps.store.get(connectionId);
    if (!record) return;
    await this.deps.store.delete(connectionId);
    this.inBackground(this.revokeAtHealthSystem(record));
  }

  /** Revokes tokens that were never stored, in the background. */
  discard(brand: TokenRecord['brand'], tokens: GrantedTokens): void {
    this.revokeInBackground(
      brand,
      tokens.refreshToken ?? tokens.accessToken,
      tokens.refreshToken ? 'refresh_token' : 'access_token',
    );
  }

  /** Revokes one token (`hint`: its kind) in the background. */
  revokeInBackground(brand: TokenRecord['brand'], token: string, hint: string): void {
    this.inBackground(this.revoke(brand, token, hint));
  }

  /** Settles when the revocations under way have (shutdown, tests). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.revocations]);
  }

  private inBackground(revocation: Promise<void>): void {
    const tracked = revocation.finally(() => this.revocations.delete(tracked));
    this.revocations.add(tracked);
  }

  private async revokeAtHealthSystem(record: TokenRecord): Promise<void> {
    let token: string;
    const field = record.refresh ? 'refresh' : 'access';
    try {
      token = this.deps.keyring.open(
        record[field]!,
        sealContext(record.connectionId, field, recordBinding(record), record[field]!),
      );
    } catch {
      return; // unreadable: nothing to revoke with
    }
    await this.revoke(record.brand, token, record.refresh ? 'refresh_token' : 'access_token');
  }

  private async revoke(brand: TokenRecord['brand'], token: string, hint: string): Promise<void> {
    const registration = this.deps.registrations.for(brand);
    if (!registration) return;
    try {
      const server = await this.deps.discovery.discover(brand.fhirBaseUrl);
      await this.deps.oauth.revoke(server, registration, token, hint);
    } catch {
      // Nothing else to do: the health system's grant lapses on its own terms.
    }
  }
}
