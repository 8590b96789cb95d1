// In-memory SyncStore for unit tests of the sync; test/api/features/connections/sync/store.test.ts holds it and
// SyncRepository to the same behaviour (docs/architecture.md, "Stores and fakes"), built on MemoryVersioned, the
// rules VersionedCollection enforces in the database: a change applies to a live sync (at the version read, where
// one is named) and bumps its version, a removed sync takes no further change, and a finish repeated with its change
// id meets its own first attempt as done. A run's progress, as in the repository, is no versioned change: it is
// written while the run is its holder's, and moves neither the version nor updatedAt.
import { DuplicateKeyError, MemoryVersioned } from '../../../shared/infra/memory-versioned.js';
import type { ChangeTarget } from '../../events/index.js';
import {
  claimedRun,
  firstSync,
  CONNECTION_SYNCS,
  NEVER,
  type SyncFinish,
  type SyncRun,
  type SyncState,
  type SyncStore,
} from './store.js';

type Entry = SyncState & { updatedAt: Date; deletedAt: Date | null };

export class FakeSyncStore implements SyncStore {
  private readonly syncs = new MemoryVersioned<Entry>();

  target(connectionId: string, version: number): ChangeTarget {
    return { collection: CONNECTION_SYNCS, id: connectionId, version };
  }

  async schedule(
    state: Pick<SyncState, 'connectionId' | 'accountId' | 'appUserId' | 'brandId'>,
    now: Date,
  ): Promise<void> {
    const { connectionId, ...rest } = state;
    try {
      this.syncs.insert(connectionId, {
        connectionId,
        version: 1,
        ...rest,
        ...firstSync(now),
      });
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error;
      // A removed sync stays removed, as the repository's update of a deleted document changes nothing.
      this.syncs.update(connectionId, 'any', { nextAt: now }, now);
    }
  }

  async get(connectionId: string): Promise<SyncState | null> {
    const entry = this.syncs.get(connectionId);
    return entry && entry.deletedAt === null ? toState(entry) : null;
  }

  async due(now: Date, limit: number): Promise<SyncState[]> {
    const due = this.syncs
      .all()
      .filter((e) => e.deletedAt === null && (e.run === null ? e.nextAt.getTime() <= now.getTime() : e.run.until < now))
      .sort((a, b) => a.nextAt.getTime() - b.nextAt.getTime());
    // A limit of 0 is no limit, as the driver's is.
    return (limit === 0 ? due : due.slice(0, limit)).map(toState);
  }

  async claim(state: SyncState, holder: string, now: Date, until: Date): Promise<SyncState | null> {
    const run = claimedRun(state, holder, now, until);
    // The version read, and no run whose holder is still at it.
    const entry = this.updateWhere(
      state.connectionId,
      (e) => e.version === state.version && (e.run === null || e.run.until < now),
      {
        status: 'RUNNING',
        run,
        ...(!state.run && { lastStartedAt: now, ...(state.fullRequested && { fullRequested: false }) }),
      },
      now,
    );
    return entry && toState(entry);
  }

  async pause(connectionId: string, holder: string, at: Date, full = false): Promise<boolean> {
    const paused = this.updateWhere(
      connectionId,
      (e) => e.run?.holder === holder,
      { status: 'IDLE', run: null, nextAt: NEVER, pausedAt: at, ...(full && { fullRequested: true }) },
      at,
    );
    return paused !== null;
  }

  async resume(connectionId: string, now: Date): Promise<void> {
    this.updateWhere(connectionId, (e) => e.pausedAt != null, { pausedAt: null, nextAt: now }, now);
  }

  async resumeAccount(accountId: string, now: Date): Promise<void> {
    const paused = this.syncs
      .all()
      .filter((e) => e.accountId === accountId && e.pausedAt != null && e.deletedAt === null);
    for (const { connectionId } of paused) await this.resume(connectionId, now);
  }

  async progress(connectionId: string, run: SyncRun): Promise<boolean> {
    // As the repository's unversioned write: whoever holds the run, whatever else the sync is (removed or not).
    return this.syncs.modify(connectionId, (entry) => {
      if (entry.run?.holder !== run.holder) return false;
      entry.run = structuredClone(run);
      return true;
    });
  }

  async finish(
    connectionId: string,
    version: number,
    finish: SyncFinish,
    at: Date,
    changeId: string,
  ): Promise<SyncState | null> {
    const { addObservations, ...set } = finish;
    // What the change adds to: the sync as it stands (the change applies only if that is at `version`).
    const observations = (this.syncs.get(connectionId)?.observations ?? 0) + addObservations;
    const entry = this.syncs.update(connectionId, version, { ...set, run: null, observations }, at, changeId);
    return entry && toState(entry);
  }

  async requestNow(connectionId: string, now: Date, full = false): Promise<SyncState | null> {
    const entry = this.syncs.update(connectionId, 'any', { nextAt: now, ...(full && { fullRequested: true }) }, now);
    return entry && toState(entry);
  }

  async remove(connectionId: string, at: Date): Promise<void> {
    this.syncs.softDelete(connectionId, 'any', at);
  }

  /** VersionedCollection.updateWhere: the change, whatever the version, if the live sync also meets `condition`. */
  private updateWhere(
    connectionId: string,
    condition: (entry: Entry) => boolean,
    changes: Partial<Entry>,
    at: Date,
  ): Entry | null {
    const current = this.syncs.get(connectionId);
    if (!current || current.deletedAt !== null || !condition(current)) return null;
    return this.syncs.update(connectionId, current.version, changes, at);
  }
}

function toState(entry: Entry): SyncState {
  const { updatedAt: _updated, deletedAt: _deleted, ...state } = entry;
  return state;
}
