// What every route of the sandbox shares: its configuration, memory and switches, made once per sandbox.
import type { Grants } from './oauth/grants.js';
import type { ObservationStore } from './fhir/observation-store.js';
import type { SandboxStats } from './stats.js';
import type { SandboxSwitches } from './switches.js';
import type { SandboxBrand, SandboxClient, SandboxPatient } from './types.js';

export interface World {
  /** Known once the server listens; routes read it per request. */
  origin: string;
  brands: SandboxBrand[];
  clients: SandboxClient[];
  patients: SandboxPatient[];
  accessTokenTtlSeconds: number;
  now: () => number;
  grants: Grants;
  observations: ObservationStore;
  switches: SandboxSwitches;
  stats: SandboxStats;
}

export const fhirBase = (world: World, brandKey: string): string => `${world.origin}/fhir/${brandKey}`;
export const issuer = (world: World, brandKey: string): string => `${world.origin}/oauth/${brandKey}`;

export interface Endpoints {
  authorization_endpoint: string;
  token_endpoint: string;
  revocation_endpoint: string;
}

export function endpoints(world: World, brandKey: string): Endpoints {
  const base = issuer(world, brandKey);
  return {
    authorization_endpoint: `${base}/authorize`,
    token_endpoint: `${base}/token`,
    revocation_endpoint: `${base}/revoke`,
  };
}

export const acceptsV2 = (brand: SandboxBrand): boolean => brand.v2 !== false;
