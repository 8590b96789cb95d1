// A run's tallies by record type, and where each type stands after it (GET /app-users/{id}: `sync.types`).
import type { SyncRun, TypeRun, TypeState } from './store.js';

/** Where each type stands after a run: its count grows by what the run added; a refused type is SKIPPED. */
export function typeStates(
  before: Record<string, TypeState>,
  run: SyncRun,
  failure: string | null,
): Record<string, TypeState> {
  const after = { ...before };
  for (const [type, t] of Object.entries(run.types ?? {})) {
    const status = t.status ?? (failure === null ? 'SYNCED' : 'FAILED');
    after[type] = {
      count: (before[type]?.count ?? 0) + t.added,
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
