// A run's tallies by record type, and where each type stands after it (GET /app-users/{id}: `sync.types`).
import type { SyncRun, TypeRun, TypeState } from './store.js';

/**
 * Where each type stands after a run: its count grows by what the run added (and shrinks by what a full run removed);
 * a refused type is SKIPPED.
 */
export function typeStates(
  before: Record<string, TypeState>,
  run: SyncRun,
  failure: string | null,
): Record<string, TypeState> {
  const after = { ...before };
  for (const [type, t] of Object.entries(run.types ?? {})) {
    const status = t.status ?? (failure === null ? 'SYNCED' : 'FAILED');
    after[type] = {
      count: Math.max(0, (before[type]?.count ?? 0) + t.added - (t.removed ?? 0)),
      status,
      ...(t.httpStatus !== undefined && { httpStatus: t.httpStatus }),
      invalid: t.invalid,
      foreignPatient: t.foreignPatient,
    };
  }
  return after;
}

/** This run's tallies for a type (made on first use). */
export function typeRun(run: SyncRun, type: string): TypeRun {
  run.types ??= {};
  return (run.types[type] ??= { added: 0, updated: 0, invalid: 0, foreignPatient: 0 });
}

/**
 * Of the types of `steps` (the run's plan: `Type`, or `Type?query` for a registration's search), those it read whole:
 * searched plainly (a registration's searches, by category say, may leave some of the type out), not refused, and
 * without an invalid resource (which may stand for a stored one the server still has).
 */
export function typesReadWhole(run: SyncRun, steps: readonly string[]): string[] {
  const narrowed = new Set(steps.filter((step) => step.includes('?')).map((step) => step.slice(0, step.indexOf('?'))));
  return [...new Set(steps)].filter((type) => {
    const tally = run.types?.[type];
    return !narrowed.has(type) && !type.includes('?') && tally?.status === undefined && (tally?.invalid ?? 0) === 0;
  });
}
