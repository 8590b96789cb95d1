// What the sandbox saw, so a test can assert on the calls Portico made (one refresh, not two) rather than on timing.
export type ClientAuthMethod = 'none' | 'client_secret_basic' | 'private_key_jwt' | 'unknown';

export interface SandboxStats {
  tokenRequests: { authorization_code: number; refresh_token: number };
  revocations: number;
  fhirRequests: number;
  /** Reads of a brand's `.well-known/smart-configuration` (not counted in fhirRequests). */
  discoveryRequests: number;
  /** Binary reads (attachments fetched). */
  binaryReads: number;
  lastTokenRequest?: { grantType: string; clientAuthMethod: ClientAuthMethod };
  reset(): void;
}

export function createStats(): SandboxStats {
  const stats: SandboxStats = {
    tokenRequests: { authorization_code: 0, refresh_token: 0 },
    revocations: 0,
    fhirRequests: 0,
    discoveryRequests: 0,
    binaryReads: 0,
    reset() {
      stats.tokenRequests = { authorization_code: 0, refresh_token: 0 };
      stats.revocations = 0;
      stats.fhirRequests = 0;
      stats.discoveryRequests = 0;
      stats.binaryReads = 0;
      delete stats.lastTokenRequest;
    },
  };
  return stats;
}
