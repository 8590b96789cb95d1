// From two probes to a brand's status, and what the operator keeps of each brand between checks (and across
// restarts, as the opaque state rows of core's EndpointHealthStore).
//
// Status rules:
// - UP: /metadata is a CapabilityStatement (or DSTU2 Conformance) and /.well-known/smart-configuration is a
//   SMART configuration (a JSON object naming its token or authorization endpoint).
// - DEGRADED: exactly one of the two.
// - DOWN: neither: every failure counts alike (network error, refused or private address, TLS failure,
//   timeout, a 4xx or 5xx, a 200 that is not the document). A DOWN after UP or DEGRADED is confirmed by a
//   second check about a minute later before it is published; until then the previous outcome stands, so one
//   dropped connection does not hide a brand from `status=up`.
// - UNKNOWN: not checked yet (no record).
// A 304 to a conditional request keeps that document's previous reading. `fhirVersion` is the
// CapabilityStatement's when /metadata is one, else null; `checkedAt` is when the outcome was last established.
import type { EndpointHealth, EndpointStatus } from '#core/catalog/model.js';
import { PROBE_REASONS, type ProbeMemory, type ProbeReason, type ProbeResult } from './probe.js';

export interface BrandRecord {
  /** What is published. */
  health: EndpointHealth;
  metadata: ProbeMemory;
  smart: ProbeMemory;
  /** How long the last check's slower request took. */
  ms: number;
  /** Set while a DOWN awaits its confirming check (ms since the epoch); the published health is the previous one. */
  suspectSince: number | null;
}

export function observedStatus(metadataOk: boolean, smartOk: boolean): Exclude<EndpointStatus, 'UNKNOWN'> {
  return metadataOk && smartOk ? 'UP' : metadataOk || smartOk ? 'DEGRADED' : 'DOWN';
}

/** The record after a check that ended at `now`. */
export function afterCheck(
  previous: BrandRecord | undefined,
  metadata: ProbeResult,
  smart: ProbeResult,
  now: Date,
): BrandRecord {
  const memory = (probe: ProbeResult): ProbeMemory => ({
    ok: probe.ok,
    reason: probe.reason,
    status: probe.status,
    fhirVersion: probe.fhirVersion,
    etag: probe.etag,
    lastModified: probe.lastModified,
  });
  const status = observedStatus(metadata.ok, smart.ok);
  const ms = Math.max(metadata.ms, smart.ms);
  const wasAnswering =
    previous !== undefined && previous.health.status !== 'DOWN' && previous.health.status !== 'UNKNOWN';
  if (status === 'DOWN' && wasAnswering && previous.suspectSince === null) {
    return {
      health: previous.health,
      metadata: memory(metadata),
      smart: memory(smart),
      ms,
      suspectSince: now.getTime(),
    };
  }
  return {
    health: {
      status,
      fhirVersion: metadata.ok ? metadata.fhirVersion : null,
      smartConfiguration: smart.ok,
      checkedAt: now.toISOString(),
    },
    metadata: memory(metadata),
    smart: memory(smart),
    ms,
    suspectSince: null,
  };
}

/** Whether the API would show something else (checkedAt aside). */
export const differs = (a: EndpointHealth | undefined, b: EndpointHealth): boolean =>
  a === undefined ||
  a.status !== b.status ||
  a.fhirVersion !== b.fhirVersion ||
  a.smartConfiguration !== b.smartConfiguration;

// State rows: [brandId, metadata, smart, ms, suspectSince], each memory as [ok, reason, status, fhirVersion, etag,
// lastModified].
type MemoryRow = [0 | 1, ProbeReason, number | null, string | null, string | null, string | null];
type StateRow = [string, MemoryRow, MemoryRow, number, number | null];

const memoryRow = (m: ProbeMemory): MemoryRow => [
  m.ok ? 1 : 0,
  m.reason,
  m.status,
  m.fhirVersion,
  m.etag,
  m.lastModified,
];

export function stateRow(brandId: string, record: BrandRecord): StateRow {
  return [brandId, memoryRow(record.metadata), memoryRow(record.smart), record.ms, record.suspectSince];
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

function memoryOf(row: unknown): ProbeMemory | undefined {
  if (!Array.isArray(row) || !PROBE_REASONS.includes(row[1] as ProbeReason)) return undefined;
  return {
    ok: row[0] === 1,
    reason: row[1] as ProbeReason,
    status: typeof row[2] === 'number' ? row[2] : null,
    fhirVersion: text(row[3]),
    etag: text(row[4]),
    lastModified: text(row[5]),
  };
}

/** The records a publication holds: its public outcome joined with the operator's row; rows it cannot read are skipped.
 * */
export function recordsFrom(health: Map<string, EndpointHealth>, state: unknown[]): Map<string, BrandRecord> {
  const records = new Map<string, BrandRecord>();
  for (const row of state) {
    if (!Array.isArray(row) || typeof row[0] !== 'string') continue;
    const published = health.get(row[0]);
    const metadata = memoryOf(row[1]);
    const smart = memoryOf(row[2]);
    if (!published || !metadata || !smart) continue;
    records.set(row[0], {
      health: published,
      metadata,
      smart,
      ms: typeof row[3] === 'number' ? row[3] : 0,
      suspectSince: typeof row[4] === 'number' ? row[4] : null,
    });
  }
  return records;
}
