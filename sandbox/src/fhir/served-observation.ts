// An observation as search serves it, with what the observation switches change: no `code` (invalidEvery),
// another patient's subject (foreignPatientEvery), a shifted meta.lastUpdated (lastUpdatedOffsetMs) and padding
// (padObservations). The store never sees these: searches filter and order by the observation's own record.
import { buildObservation, type ObservationVersion } from '../data.js';
import type { SandboxSwitches } from '../switches.js';

/** Whom foreignPatientEvery's observations name as their subject: a patient of no sandbox. */
export const FOREIGN_PATIENT_ID = 'someone-else';

/** What `"note":[{"text":""}]` adds to an object's JSON, comma included. */
const NOTE_OVERHEAD = JSON.stringify({ note: [{ text: '' }] }).length - 1;

/** Whether the observation at 0-based `index` is an every-k-th one, counted 1-based as the switches say. */
const everyKth = (every: number | null | undefined, index: number): boolean =>
  every !== null && every !== undefined && every > 0 && (index + 1) % every === 0;

export function servedObservation(
  switches: SandboxSwitches,
  brandKey: string,
  patientId: string,
  entry: ObservationVersion,
): Record<string, unknown> {
  const resource = buildObservation(entry, {
    brandKey,
    patientId,
    invalid: everyKth(switches.invalidEvery, entry.index),
    ...(everyKth(switches.foreignPatientEvery, entry.index) ? { subjectId: FOREIGN_PATIENT_ID } : {}),
    lastUpdatedOffsetMs: switches.lastUpdatedOffsetMs,
  });
  const padding = switches.padObservations;
  if (padding && (padding.every === undefined || everyKth(padding.every, entry.index))) pad(resource, padding.bytes);
  return resource;
}

/** Adds a note (an Annotation) that brings the resource's JSON to exactly `bytes`, when it is shorter. */
function pad(resource: Record<string, unknown>, bytes: number): void {
  const missing = bytes - JSON.stringify(resource).length - NOTE_OVERHEAD;
  if (missing > 0) resource.note = [{ text: filler(missing) }];
}

// A benchmark serves 10,000 observations of 200 KiB: one string of x's, grown when a longer one is asked for, is
// sliced for each, and V8 shares a slice's characters with the original instead of copying them.
let longestFiller = '';
function filler(length: number): string {
  if (longestFiller.length < length) longestFiller = 'x'.repeat(length);
  return longestFiller.slice(0, length);
}
