// The one write path for documents that carry a version: every change is an update conditional on the
// `_version` the caller read (optimistic concurrency: no read-then-write race), runs under the per-document
// lock FerretDB needs (core/src/infra/locks.ts), and invalidates the caches that hold the document, also
// after an ambiguous failure, since the write may have happened. Soft deletion is one such change. Every
// repository of versioned documents writes through this, and only through this.
import type { Collection, Filter, OptionalUnlessRequiredId, UpdateFilter } from 'mongodb';
import type { DocumentLocks } from '../../../core/src/infra/locks.js';

export interface VersionedDocument {
  _id: string;
  /** 1 at creation, +1 on every change. */
  _version: number;
  updatedAt: Date;
  /** Soft deletion: set once, never cleared; a deleted document takes no further change. */
  deletedAt: Date | null;
}

/** Fields to set, and optional fields to remove. */
export interface Changes<D> {
  set?: Partial<Omit<D, keyof VersionedDocument>>;
  unset?: (keyof D & string)[];
}

/** The version a write expects: a number, or `any` for a change that is right whatever came before. */
export type ExpectedVersion = number | 'any';

export class VersionedCollection<D extends VersionedDocument> {
  constructor(
    readonly collection: Collection<D>,
    private readonly locks: DocumentLocks,
    /** Forgets cached copies of a document (by _id) here and on every replica. */
    private readonly invalidate: (id: string) => void = () => {},
  ) {}

  async insert(doc: D): Promise<void> {
    try {
      await this.collection.insertOne(doc as OptionalUnlessRequiredId<D>);
    } finally {
      this.invalidate(doc._id); // a "not there" may have been cached
    }
  }

  /** The document as stored now, deleted or not. */
  async find(id: string): Promise<D | null> {
    return (await this.collection.findOne({ _id: id } as Filter<D>)) as D | null;
  }

  /** Applies the changes if the document is live at `version`; the document after, or null when it moved on or went away. */
  update(id: string, version: ExpectedVersion, changes: Changes<D>, at: Date): Promise<D | null> {
    return this.change(id, version, { ...changes.set, updatedAt: at }, changes.unset ?? []);
  }

  /** Marks the document deleted if it is live at `version`; false when it moved on or went away. */
  async softDelete(id: string, version: ExpectedVersion, at: Date): Promise<boolean> {
    return (await this.change(id, version, { deletedAt: at, updatedAt: at }, [])) !== null;
  }

  private async change(id: string, version: ExpectedVersion, set: Record<string, unknown>, unset: string[]): Promise<D | null> {
    const filter = { _id: id, deletedAt: null, ...(version !== 'any' && { _version: version }) } as Filter<D>;
    const update = { $set: set, $inc: { _version: 1 }, ...(unset.length > 0 && { $unset: Object.fromEntries(unset.map((name) => [name, ''])) }) } as unknown as UpdateFilter<D>;
    return (await this.write(id, () => this.collection.findOneAndUpdate(filter, update, { returnDocument: 'after' }))) as D | null;
  }

  /**
   * Another conditional write to one document that is not a versioned change (a usage counter's `$inc`
   * guarded by its limit), under the same lock; true when the filter matched. `cached: false` says the
   * fields it writes are in no cached copy, so caches are left alone (quotas change on every create).
   */
  async modify(id: string, condition: Filter<D>, update: UpdateFilter<D>, options: { cached: boolean } = { cached: true }): Promise<boolean> {
    const result = await this.write(id, () => this.collection.updateOne({ ...condition, _id: id } as Filter<D>, update), options.cached);
    return result.modifiedCount === 1;
  }

  private async write<T>(id: string, operation: () => Promise<T>, cached = true): Promise<T> {
    try {
      return await this.locks.withLock(`${this.collection.collectionName}:${id}`, operation);
    } finally {
      if (cached) this.invalidate(id);
    }
  }
}
