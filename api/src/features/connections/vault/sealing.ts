// How a connection's tokens are sealed (docs/connecting.md, "Token vault"): each value is bound (the cipher's
// additional data) to its account, connection, field and the FHIR base URL it may be sent to, so a value copied to
// another connection, or read for another server, does not open.
import type { Keyring, Sealed } from './keyring.js';
import type { TokenRecord } from './store.js';

/** What a connection says its tokens are for: whose they are, where they may be sent, and whose records. */
export interface TokenBinding {
  accountId: string;
  fhirBaseUrl: string;
  /** The health system's patient id the connection was made for. */
  patient: string;
}

export type Field = 'access' | 'refresh';

/** The additional data of a sealed value: the binding's form (aad 2), or the first form (connection and field). */
export function sealContext(
  connectionId: string,
  field: Field,
  binding: Pick<TokenBinding, 'accountId' | 'fhirBaseUrl'>,
  sealed?: Pick<Sealed, 'aad'>,
): string {
  if (sealed && sealed.aad === undefined) return `${connectionId}/${field}`;
  return JSON.stringify(['portico-token/2', binding.accountId, connectionId, field, binding.fhirBaseUrl]);
}

/** Seals a connection's tokens under the current key, bound as `binding` says. */
export function sealTokens(
  keyring: Keyring,
  connectionId: string,
  binding: Pick<TokenBinding, 'accountId' | 'fhirBaseUrl'>,
  access: string,
  refresh: string | undefined,
): Pick<TokenRecord, 'access' | 'refresh'> {
  const seal = (value: string, field: Field): Sealed => ({
    aad: 2,
    ...keyring.seal(value, sealContext(connectionId, field, binding)),
  });
  return { access: seal(access, 'access'), refresh: refresh === undefined ? null : seal(refresh, 'refresh') };
}

/** The binding a record was stored with (for what has no connection at hand: revocation, rewrapping). */
export const recordBinding = (record: TokenRecord): Pick<TokenBinding, 'accountId' | 'fhirBaseUrl'> => ({
  accountId: record.accountId,
  fhirBaseUrl: record.brand.fhirBaseUrl,
});
