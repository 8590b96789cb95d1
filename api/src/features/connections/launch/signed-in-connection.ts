// The connection a successful sign-in makes (docs/connecting.md, "The launch"): the tokens are stored first (alone
// they grant nothing; a sync scheduled a minute ahead removes them if this process dies before the connection is
// made), then the connection is made exactly as `complete` makes one, or a reconnect renews it. A reconnect must be
// the same patient on the same FHIR server: another patient's grant is revoked, never mixed into the connection,
// and the connection records why it still waits (`patient_mismatch`). Whatever the refusal, or a failure of
// Portico's own, what the sign-in obtained is deleted and revoked at the health system.
import { randomUUID } from 'node:crypto';
import type { HealthLink } from '../../app-users/index.js';
import type { ConnectSession } from '../../connect-sessions/index.js';
import type { CatalogBrand } from '#core/catalog/model.js';
import type { Clock } from '#core/clock.js';
import type { ConnectionService } from '../lifecycle.js';
import type { ConnectingSync, SyncSchedule } from '../sync/schedule.js';
import type { GrantedTokens } from '../../smart/index.js';

/** What the launch needs of the token vault (vault/). */
export interface TokenKeeper {
  save(
    connectionId: string,
    accountId: string,
    brand: Pick<CatalogBrand, 'id' | 'platformType' | 'fhirBaseUrl'>,
    tokens: GrantedTokens,
  ): Promise<void>;
  /** Deletes a connection's tokens and revokes them at the health system (in the background). */
  forget(connectionId: string): Promise<void>;
  /** Revokes tokens that were never stored (a refused reconnect), in the background. */
  discard(brand: Pick<CatalogBrand, 'id' | 'platformType' | 'fhirBaseUrl'>, tokens: GrantedTokens): void;
}

export interface SignedInDeps {
  connections: Pick<ConnectionService, 'connect' | 'connectionOf' | 'reauthorized' | 'requireReauthorization'>;
  vault: TokenKeeper;
  /** Before the tokens are stored: the connection's sync is scheduled a grace period ahead (see above). */
  syncs: Pick<SyncSchedule, 'connecting'>;
  clock: Clock;
}

/** How long a connection being made has before its sync's first look (which removes what a crash left half-made). */
export const CONNECTING_GRACE_MS = 60_000;

/** The connection's id, or the error to return to the app. */
export async function connectSignedIn(
  deps: SignedInDeps,
  session: ConnectSession,
  brand: CatalogBrand,
  tokens: GrantedTokens,
): Promise<string | { error: string }> {
  const { id, platformType, fhirBaseUrl } = brand;
  const vaultBrand = { id, platformType, fhirBaseUrl };
  const health: HealthLink = { fhirBaseUrl, patient: tokens.patient!, scope: tokens.scope };
  if (session.reconnect) {
    const live = await deps.connections.connectionOf(session.accountId, session.reconnect);
    const was = live?.connection.health;
    if (!was || was.patient !== health.patient || was.fhirBaseUrl !== fhirBaseUrl) {
      deps.vault.discard(vaultBrand, tokens);
      if (!was) return { error: 'connection_refused' };
      await deps.connections.requireReauthorization(session.accountId, session.reconnect, 'patient_mismatch');
      return { error: 'patient_mismatch' };
    }
  }
  const connectionId = session.reconnect ?? randomUUID();
  const brandId = session.brandId!;
  const sync: ConnectingSync = { accountId: session.accountId, appUserId: session.appUserId, connectionId, brandId };
  try {
    await deps.syncs.connecting(sync, new Date(deps.clock.now().getTime() + CONNECTING_GRACE_MS));
    await deps.vault.save(connectionId, session.accountId, vaultBrand, tokens);
  } catch {
    // Portico's own trouble (its database): nothing is connected, and nothing of the grant is kept.
    deps.vault.discard(vaultBrand, tokens);
    await deps.vault.forget(connectionId).catch(() => {});
    return { error: 'server_error' };
  }
  try {
    if (session.reconnect) {
      if (await deps.connections.reauthorized(session.accountId, connectionId, health)) return connectionId;
    } else {
      await deps.connections.connect(session.accountId, session.appUserId, {
        appId: session.appId,
        brandId,
        sessionId: session.id,
        connectionId,
        health,
      });
      return connectionId;
    }
  } catch {
    // A tombstoned user, or one at its connection limit: nothing is connected.
  }
  await deps.vault.forget(connectionId);
  return { error: 'connection_refused' };
}
