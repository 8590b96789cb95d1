// The walk through a sync run's searchset pages (docs/connecting.md, "Sync"): the first page it reads,
// `Observation?patient=<patient>&_count=100` (after the first run, only what changed since the last run began, by the
// server's own clock), which of a page's entries it keeps, the next link it follows, and where the next run begins.
// Each resource is checked as ingest checks it (invalid ones, and any over 1 MiB, are skipped and counted) and must be
// the connection's patient's (others are counted and never stored).
import { COMPARTMENT_TYPES, readRecord } from '../../clinical/index.js';
import { underBase } from '../../smart/index.js';
import { MAX_RESOURCE_BYTES } from './batch-writer.js';
import { SyncFailure } from './fhir-pages.js';
import { isPatients } from './patient-check.js';

export const PAGE_SIZE = 100;
const COMPARTMENT = new Set<string>(COMPARTMENT_TYPES);
const isCompartment = (type: string) => COMPARTMENT.has(type);
/** How far before its clock at a run's start the next run reads from: upserts make the overlap harmless. */
export const HIGH_WATER_MARGIN_MS = 5 * 60_000;

/** The entries of a run not stored, counted since its progress was last written. */
export interface Tally {
  skipped: number;
  foreignPatient: number;
}

/** The observation an entry holds, if it is a valid one of the connection's patient; else it is counted. */
export function checkEntry(
  entry: { kind: 'entry'; value: unknown; bytes: number } | { kind: 'oversized'; bytes: number },
  health: { patient: string; fhirBaseUrl: string },
  tally: Tally,
) {
  if (entry.kind === 'oversized') {
    tally.skipped++;
    return undefined;
  }
  const { search, resource } = (entry.value ?? {}) as { search?: { mode?: unknown }; resource?: unknown };
  // Resources brought in by _include and the server's OperationOutcome are not the search's matches.
  if (search?.mode !== undefined && search.mode !== 'match') return undefined;
  if (entry.bytes > MAX_RESOURCE_BYTES && Buffer.byteLength(JSON.stringify(resource ?? null)) > MAX_RESOURCE_BYTES) {
    tally.skipped++;
    return undefined;
  }
  return checkResource(resource, entry.bytes, health, tally);
}

/** A resource read (a search's match, or a read), if it is a valid record of the connection's patient; else counted. */
export function checkResource(
  resource: unknown,
  bytes: number,
  health: { patient: string; fhirBaseUrl: string },
  tally: Tally,
) {
  const { observation, problems } = readRecord(resource, undefined, false);
  if (problems.length > 0 || !observation) {
    tally.skipped++;
    return undefined;
  }
  // A referenced type (Medication, Practitioner…) belongs to no patient: only a compartment type is checked.
  if (
    isCompartment(observation.resourceType ?? 'Observation') &&
    !isPatients(resource, health.patient, health.fhirBaseUrl)
  ) {
    tally.foreignPatient++;
    return undefined;
  }
  return { observation, bytes };
}

export function firstPage(fhirBaseUrl: string, patient: string, highWater: string | null): string {
  const url = new URL(underBase(fhirBaseUrl, 'Observation'));
  url.searchParams.set('patient', patient);
  url.searchParams.set('_count', String(PAGE_SIZE));
  if (highWater !== null) url.searchParams.set('_lastUpdated', `ge${highWater}`);
  return url.href;
}

/** The searchset's next link, if it has a usable one. */
export function nextLink(bundle: Record<string, unknown>): string | null {
  const links = Array.isArray(bundle['link']) ? (bundle['link'] as { relation?: unknown; url?: unknown }[]) : [];
  const next = links.find((l) => l?.relation === 'next' && typeof l.url === 'string')?.url as string | undefined;
  if (next !== undefined && !URL.canParse(next)) throw new SyncFailure('invalid_response', 'a next link is not a URL');
  return next ?? null;
}

/**
 * The next run's `_lastUpdated=ge…`: the server's clock as it answered the first page (the Bundle's
 * `meta.lastUpdated`, else its `Date` header, else Portico's own), less a margin, and never later than Portico's now.
 * Never the resources' own `meta.lastUpdated`: one dated in the future would stop incremental sync for good.
 */
export function nextHighWater(bundle: Record<string, unknown>, date: Date | null, now: Date): string {
  const stated = (bundle['meta'] as { lastUpdated?: unknown } | undefined)?.lastUpdated;
  const parsed = typeof stated === 'string' ? Date.parse(stated) : NaN;
  const server = Number.isFinite(parsed) ? parsed : (date?.getTime() ?? now.getTime());
  return new Date(Math.min(server - HIGH_WATER_MARGIN_MS, now.getTime())).toISOString();
}
