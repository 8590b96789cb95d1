// The in-memory counterpart of VersionedCollection that the fake stores are built on, so that services are
// unit-tested against the same rules the database enforces: an insert refuses an id that exists (as a
// unique index does); a change applies only to a live entry at the expected version, and bumps it; entries
// go in and come out as copies, as they would through a database. A change id is recorded by the version the
// change leaves, as VersionedCollection's ring does, so a write repeated with its change id meets its own
// first attempt as done, not as a conflict (docs/architecture.md, "Stores and fakes": the fake keeps the
// repository's rules).
import { CHANGE_RING } from './change-scope.js';

export interface VersionedEntity {
  version: number;
  updatedAt: Date;
  deletedAt: Date | null;
}

/** What the MongoDB driver throws for a duplicate key (code 11000), which the API answers with 409. */
export class DuplicateKeyError extends Error {
  readonly code = 11000;
  constructor(key: string) {
    super(`E11000 duplicate key: ${key}`);
    this.name = 'DuplicateKeyError';
  }
}

const copy = <T>(value: T): T => structuredClone(value);

export class MemoryVersioned<T extends VersionedEntity> {
  private readonly entries = new Map<string, T>();
  /** Change ids by key, then by version modulo CHANGE_RING. */
  private readonly changes = new Map<string, Map<number, string>>();

  /** Refuses an existing key, unless it was this change (`changeId`) that inserted it. */
  insert(key: string, entity: T, changeId?: string): void {
    const current = this.entries.get(key);
    if (current) {
      if (changeId !== undefined && this.recorded(key, current, entity.version, changeId)) return;
      throw new DuplicateKeyError(key);
    }
    this.entries.set(key, copy(entity));
    this.record(key, entity.version, changeId);
  }

  get(key: string): T | null {
    const entity = this.entries.get(key);
    return entity ? copy(entity) : null;
  }

  /** Every entry, in insertion order. */
  all(): T[] {
    return [...this.entries.values()].map(copy);
  }

  /**
   * Applies the changes if the entry is live at `version` (`any`: whatever it is); the entry after, or null. With
   * a change id (which needs a version), a change that already happened answers the entry as it is now.
   */
  update(key: string, version: number | 'any', changes: Partial<T>, at: Date, changeId?: string): T | null {
    if (changeId !== undefined && version === 'any') throw new Error('a change id needs the version it expects');
    const current = this.entries.get(key);
    if (!current || current.deletedAt !== null || (version !== 'any' && current.version !== version)) {
      // The change that would leave it at version + 1 may be this one, made already (VersionedCollection.change).
      const ours = current && changeId !== undefined && this.recorded(key, current, Number(version) + 1, changeId);
      return ours ? copy(current) : null;
    }
    const next = { ...current, ...copy(changes), updatedAt: at, version: current.version + 1 };
    this.entries.set(key, next);
    this.record(key, next.version, changeId);
    return copy(next);
  }

  softDelete(key: string, version: number | 'any', at: Date, changeId?: string): boolean {
    return this.update(key, version, { deletedAt: at } as Partial<T>, at, changeId) !== null;
  }

  /** A conditional change that is not versioned (a quota counter): `change` edits the entry and says whether it did. */
  modify(key: string, change: (entity: T) => boolean): boolean {
    const current = this.entries.get(key);
    return current ? change(current) : false;
  }

  private record(key: string, version: number, changeId: string | undefined): void {
    if (changeId === undefined) return;
    let ring = this.changes.get(key);
    if (!ring) this.changes.set(key, (ring = new Map<number, string>()));
    ring.set(version % CHANGE_RING, changeId);
  }

  /** changeRecorded (change-scope.ts) for an entry: the change that left it at `version` was `changeId`. */
  private recorded(key: string, current: T, version: number, changeId: string): boolean {
    return current.version >= version && this.changes.get(key)?.get(version % CHANGE_RING) === changeId;
  }
}
