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
 * Of `types` (the run's steps'), those it read whole: not refused, and without an invalid resource (which may stand for
 * a stored one the server still has).
 */
export function typesReadWhole(run: SyncRun, types: readonly string[]): string[] {
  return [...new Set(types)].filter((type) => {
    const tally = run.types?.[type];
    return tally?.status === undefined && (tally?.invalid ?? 0) === 0;
  });
}
