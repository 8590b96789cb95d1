// The sandbox EHR's public shapes: what a test, a benchmark or `npm start` passes in and gets back. The Portico
// engineers code against these names, so they change only together with their callers.
import type { JsonWebKey } from 'node:crypto';
import type { SandboxSwitches } from './switches.js';
import type { SandboxStats } from './stats.js';

export interface SandboxBrand {
  key: string;
  name: string;
  /** Lists "permission-v2" in capabilities and accepts v2 scopes (default true); false: v1 scopes only. */
  v2?: boolean;
}

export type SandboxClientAuth =
  | { method: 'none' }
  | { method: 'client_secret_basic'; secret: string }
  /** Public keys, ES384 or RS384, each with a kid. */
  | { method: 'private_key_jwt'; jwks: JsonWebKey[] };

export interface SandboxClient {
  clientId: string;
  /** The name the sign-in page shows the patient (as an EHR shows a registered app's); the client id without one. */
  name?: string;
  redirectUris: string[];
  auth: SandboxClientAuth;
}

export interface SandboxPatient {
  id: string;
  username: string;
  password: string;
  name: string;
  birthDate: string;
  /** How many observations the patient has when the sandbox starts (generated; 0 with a `record`). */
  observations: number;
  /**
   * A whole synthetic record: the name of a Synthea fixture (test/fixtures/synthea) whose resources of every type
   * the sandbox serves as this patient's (fhir/record-store.ts), in place of generated observations.
   */
  record?: string;
}

export interface SandboxOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  brands?: SandboxBrand[];
  clients: SandboxClient[];
  patients?: SandboxPatient[];
  /** Default 3600. */
  accessTokenTtlSeconds?: number;
  /**
   * Milliseconds since the epoch; injectable so that expiry is testable without waiting. Every response's Date
   * header and search Bundles' meta.lastUpdated read it too.
   */
  now?: () => number;
}

export interface SandboxEhr {
  /** http://127.0.0.1:PORT */
  origin: string;
  /** `${origin}/fhir/${brandKey}` */
  fhirBaseUrl(brandKey: string): string;
  switches: SandboxSwitches;
  stats: SandboxStats;
  /** New observations for the patient, meta.lastUpdated = now. */
  addObservations(brandKey: string, patientId: string, count: number): void;
  /** Bumps one resource of a whole record: its meta.lastUpdated (to now) and meta.versionId. */
  touchRecord(brandKey: string, type: string, id: string): void;
  /** Deletes one resource of a whole record: the server no longer returns it. */
  removeRecord(brandKey: string, type: string, id: string): void;
  /** Bumps one observation's meta.lastUpdated (to now) and meta.versionId. */
  touchObservation(brandKey: string, patientId: string, index: number): void;
  close(): Promise<void>;
}
