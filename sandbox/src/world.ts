// What every route of the sandbox shares: its configuration, memory and switches, made once per sandbox.
import type { Grants } from './oauth/grants.js';
import type { ObservationStore } from './fhir/observation-store.js';
import type { RecordStore } from './fhir/record-store.js';
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
  /** Whole records, for the patients given one. */
  records: RecordStore;
  switches: SandboxSwitches;
  stats: SandboxStats;
}

export const fhirBase = (world: World, brandKey: string): string => `${world.origin}/fhir/${brandKey}`;

/** Where discovery says the brand's OAuth endpoints are: the sandbox's origin, unless endpointHostnames renames it. */
export function advertisedOrigin(world: World, brandKey: string): string {
  const hostnames = world.switches.endpointHostnames;
  if (!Object.hasOwn(hostnames, brandKey)) return world.origin;
  const url = new URL(world.origin);
  url.hostname = hostnames[brandKey]!;
  return url.origin;
}

/** The brand's issuer as discovery advertises it; `origin` names it on another (the sandbox's own, say). */
export const issuer = (world: World, brandKey: string, origin = advertisedOrigin(world, brandKey)): string =>
  `${origin}/oauth/${brandKey}`;

export interface Endpoints {
  authorization_endpoint: string;
  token_endpoint: string;
  revocation_endpoint: string;
}

export function endpoints(world: World, brandKey: string, origin = advertisedOrigin(world, brandKey)): Endpoints {
  const base = issuer(world, brandKey, origin);
  return {
    authorization_endpoint: `${base}/authorize`,
    token_endpoint: `${base}/token`,
    revocation_endpoint: `${base}/revoke`,
  };
}

export const acceptsV2 = (brand: SandboxBrand): boolean => brand.v2 !== false;
