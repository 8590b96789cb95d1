// The end of a sync run (docs/connecting.md, "Sync"): its state (status, marks, per-type counts, when the next is due)
// and its event (`connection.synced` with its counts, or `connection.sync_failed` with its reason), written together
// through the outbox, and only by the replica that still holds the run.
import { NEVER, type SyncRun, type SyncState, type SyncStore } from './store.js';
import type { Clock } from '#core/clock.js';
import type { EventOutbox } from '../../events/index.js';
import { typeStates } from './type-tallies.js';

export async function finishRun(
  deps: { store: SyncStore; outbox: EventOutbox; clock: Clock; intervalMs: number },
  claimed: SyncState,
  run: SyncRun,
  failure: string | null,
): Promise<void> {
  const { store, outbox, clock } = deps;
  const current = await store.get(claimed.connectionId);
  if (current?.run?.holder !== run.holder) return;
  const now = clock.now();
  const base = { connectionId: claimed.connectionId, appUserId: claimed.appUserId, brandId: claimed.brandId };
  const event =
    failure === null
      ? outbox.event('connection.synced', claimed.accountId, `connection:${claimed.connectionId}`, {
          ...base,
          added: run.added,
          updated: run.updated,
          // A full run also says what it removed (what the health system no longer returns).
          ...(run.full && { removed: removedOf(run) }),
          counts: Object.fromEntries(
            Object.entries(run.types ?? {}).map(([type, t]) => [
              type,
              { added: t.added, updated: t.updated, ...(run.full && { removed: t.removed ?? 0 }) },
            ]),
          ),
        })
      : outbox.event('connection.sync_failed', claimed.accountId, `connection:${claimed.connectionId}`, {
          ...base,
          reason: failure,
        });
  await outbox.record(
    [event],
    store.target(claimed.connectionId, current.version + 1),
    async (changeId) =>
      (await store.finish(
        claimed.connectionId,
        current.version,
        {
          status: failure === null ? 'IDLE' : 'FAILED',
          lastSkipped: run.skipped,
          lastForeignPatient: run.foreignPatient ?? 0,
          lastError: failure,
          ...(failure === null && { lastSyncedAt: now }),
          highWater:
            failure === null ? (run.marks?.Observation ?? run.highWater ?? current.highWater) : current.highWater,
          // A finished run's marks replace those of the searches it completed; a failed run keeps the old ones.
          marks: failure === null ? { ...current.marks, ...run.marks } : (current.marks ?? {}),
          types: typeStates(current.types ?? {}, run, failure),
          // (Never below none: a full run may remove observations the account ingested, which no sync counted.)
          addObservations: Math.max(
            -current.observations,
            (run.types?.Observation?.added ?? 0) - (run.types?.Observation?.removed ?? 0),
          ),
          // A full run that failed for a passing reason is asked for again: the next run is the full one.
          ...(failure !== null && run.full && PASSING.test(failure) && { fullRequested: true }),
          // A connection waiting for its patient is not tried again on schedule (a reconnect schedules it).
          nextAt: failure === 'reauthorization_required' ? NEVER : new Date(now.getTime() + deps.intervalMs),
        },
        now,
        changeId,
      )) ?? undefined,
  );
}

/** Failures a later run may not meet (the server or Portico's database down a while, a limit), unlike a refused link. */
const PASSING = /^(unavailable|rate_limited|internal_error|token_refresh_failed|http_5\d\d)$/;

/** What a full run removed, of every type. */
const removedOf = (run: SyncRun) => Object.values(run.types ?? {}).reduce((sum, t) => sum + (t.removed ?? 0), 0);
