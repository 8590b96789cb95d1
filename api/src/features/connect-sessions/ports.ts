// What connect sessions need of other features, as interfaces those implement: the connections (features/connections)
// make and look up connections and say which brands a patient can sign in at; the catalog says which brands exist.
import type { CatalogBrand } from '#core/catalog/model.js';
import type { Connection } from '../app-users/index.js';

/** What connect sessions need of the connections (features/connections implements it). */
export interface SessionConnections {
  /** Makes the connection a completed session names (`connection.created`). */
  connect(
    accountId: string,
    appUserId: string,
    link: { appId: string; brandId: string; sessionId: string; connectionId: string },
  ): Promise<Connection>;
  /** The live connection and its user; null when absent, revoked or another account's. */
  connectionOf(accountId: string, connectionId: string): Promise<{ appUserId: string; connection: Connection } | null>;
}

/** The served catalog (features/catalog): whether it has the brand a session names. */
export interface ServedBrands {
  brand(brandId: string): CatalogBrand | undefined;
}

/**
 * Whether Portico can lead a patient to a brand's sign-in (a client registration, an admissible URL, endpoints on
 * the hosts it pins); without a brand, whether any brand is (features/connections, the launch).
 */
export interface SignIns {
  connectable(brandId: string): Promise<boolean>;
  anyConnectable(): boolean;
}
