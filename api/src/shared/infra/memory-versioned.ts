// The in-memory counterpart of VersionedCollection that the fake stores are built on, so that services are
// unit-tested against the same rules the database enforces: an insert refuses an id that exists (as a
// unique index does); a change applies only to a live entry at the expected version, and bumps it; entries
// go in and come out as copies, as they would through a database.

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

  insert(key: string, entity: T): void {
    if (this.entries.has(key)) throw new DuplicateKeyError(key);
    this.entries.set(key, copy(entity));
  }

  get(key: string): T | null {
    const entity = this.entries.get(key);
    return entity ? copy(entity) : null;
  }

  /** Every entry, in insertion order. */
  all(): T[] {
    return [...this.entries.values()].map(copy);
  }

  /** Applies the changes if the entry is live at `version` (`any`: whatever it is); the entry after, or null. */
  update(key: string, version: number | 'any', changes: Partial<T>, at: Date): T | null {
    const current = this.entries.get(key);
    if (!current || current.deletedAt !== null || (version !== 'any' && current.version !== version)) return null;
    const next = { ...current, ...copy(changes), updatedAt: at, version: current.version + 1 };
    this.entries.set(key, next);
    return copy(next);
  }

  softDelete(key: string, version: number | 'any', at: Date): boolean {
    return this.update(key, version, { deletedAt: at } as Partial<T>, at) !== null;
  }

  /** A conditional change that is not versioned (a quota counter): `change` edits the entry and says whether it did. */
  modify(key: string, change: (entity: T) => boolean): boolean {
    const current = this.entries.get(key);
    return current ? change(current) : false;
  }
}
