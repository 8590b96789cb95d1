// The one write path for documents that carry a version: every change is an update conditional on the
// `_version` the caller read (optimistic concurrency: no read-then-write race), made atomic on MongoDB and
// on FerretDB alike (core/src/infra/where.ts), and invalidates the caches that hold the document, also after
// an ambiguous failure, since the write may have happened. Soft deletion is one such change. Every
// repository of versioned documents writes through this, and only through this.
//
// A change may carry a change id (the outbox's, for the events it causes): it is written into the document
// with the change itself, in a ring keyed by the version the change leaves, so that after a crash anyone can
// tell from the document alone whether that change happened (changeRecorded). The write itself uses it too:
// a write repeated after its answer was lost (a driver's retry) meets its own first attempt as a duplicate
// key or a version that moved on, and the change id tells that apart from someone else's change, so a change
// that happened is never reported as one that did not. Inside an idempotent request (shared/infra/change-scope.ts) a
// change without an id of its own takes the request's, and every change first records its recovery point
// there, so that a retry can tell whether the request changed anything.
import type { Collection, Filter, OptionalUnlessRequiredId, UpdateFilter } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import { updateOneWhere } from '#core/infra/where.js';
import { AppError } from '../http/errors.js';
import { CHANGE_RING, changeRecorded, currentChangeScope } from './change-scope.js';
import { isDuplicateKey } from '#core/infra/mongo.js';

export interface VersionedDocument {
  _id: string;
  /** 1 at creation, +1 on every change. */
  _version: number;
  updatedAt: Date;
  /** Soft deletion: set once, never cleared; a deleted document takes no further change. */
  deletedAt: Date | null;
  /** Change ids by version modulo CHANGE_RING (see changeRecorded). */
  _changes?: Record<string, string>;
}

/** Rounds a change "whatever the version" makes in a change scope before giving up on a busy document. */
const ANY_VERSION_ATTEMPTS = 10;

type NumericKeys<D> = { [K in keyof D]: D[K] extends number ? K : never }[keyof D] & string;
type DateKeys<D> = { [K in keyof D]: D[K] extends Date | null ? K : never }[keyof D] & string;

/** Fields to set, optional fields to remove, counters to add to, dates to move forward only. */
export interface Changes<D> {
  set?: Partial<Omit<D, keyof VersionedDocument>>;
  unset?: (keyof D & string)[];
  inc?: Partial<Record<NumericKeys<D>, number>>;
  max?: Partial<Record<DateKeys<D>, Date>>;
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

  async insert(doc: D, given?: string): Promise<void> {
    const changeId = await this.recoveryPoint(doc._id, doc._version, given);
    const stored =
      changeId === undefined ? doc : { ...doc, _changes: { [String(doc._version % CHANGE_RING)]: changeId } };
    try {
      await this.collection.insertOne(stored as OptionalUnlessRequiredId<D>);
    } catch (error) {
      const ours =
        changeId !== undefined &&
        isDuplicateKey(error) &&
        changeRecorded(await this.find(doc._id), doc._version, changeId);
      if (!ours) throw error;
    } finally {
      this.invalidate(doc._id); // a "not there" may have been cached
    }
  }

  /** The document as stored now, deleted or not. */
  async find(id: string): Promise<D | null> {
    return (await this.collection.findOne({ _id: id } as Filter<D>)) as D | null;
  }

  /**
   * Applies the changes if the document is live at `version`; the document after, or null when it moved on or
   * went away. A change id needs a known version (the one the change leaves is version + 1).
   */
  update(id: string, version: ExpectedVersion, changes: Changes<D>, at: Date, changeId?: string): Promise<D | null> {
    return this.change(id, version, changes, { updatedAt: at }, changeId);
  }

  /** The same, whatever the version, if the live document also matches `condition`. */
  updateWhere(id: string, condition: Filter<D>, changes: Changes<D>, at: Date): Promise<D | null> {
    return this.change(id, 'any', changes, { updatedAt: at }, undefined, condition);
  }

  /** Marks the document deleted if it is live at `version`; false when it moved on or went away. */
  async softDelete(id: string, version: ExpectedVersion, at: Date, changeId?: string): Promise<boolean> {
    return (await this.change(id, version, {}, { deletedAt: at, updatedAt: at }, changeId)) !== null;
  }

  /**
   * Another conditional write to one document that is not a versioned change (a usage counter's `$inc`
   * guarded by its limit), under the same lock; true when the filter matched. `cached: false` says the
   * fields it writes are in no cached copy, so caches are left alone (quotas change on every create).
   */
  async modify(
    id: string,
    condition: Filter<D>,
    update: UpdateFilter<D>,
    options: { cached: boolean } = { cached: true },
  ): Promise<boolean> {
    return (
      (await this.write(
        id,
        () => updateOneWhere(this.collection, this.locks, id, condition, update),
        options.cached,
      )) !== null
    );
  }

  private async change(
    id: string,
    version: ExpectedVersion,
    changes: Changes<D>,
    system: Record<string, unknown>,
    given: string | undefined,
    extra: Filter<D> = {},
  ): Promise<D | null> {
    if (given !== undefined && version === 'any') throw new Error('a change id needs the version the change expects');
    if (version === 'any' && currentChangeScope()) return this.changeAtCurrentVersion(id, changes, system, extra);
    const changeId = version === 'any' ? undefined : await this.recoveryPoint(id, version + 1, given);
    const set: Record<string, unknown> = { ...changes.set, ...system };
    if (changeId !== undefined) set[`_changes.${(Number(version) + 1) % CHANGE_RING}`] = changeId;
    const update: Record<string, unknown> = { $set: set, $inc: { ...changes.inc, _version: 1 } };
    if (changes.unset?.length) update.$unset = Object.fromEntries(changes.unset.map((name) => [name, '']));
    if (changes.max && Object.keys(changes.max).length > 0) update.$max = changes.max;
    const condition = { ...extra, deletedAt: null, ...(version !== 'any' && { _version: version }) } as Filter<D>;
    const after = (await this.write(id, () =>
      updateOneWhere(this.collection, this.locks, id, condition, update as UpdateFilter<D>),
    )) as D | null;
    if (after !== null || changeId === undefined) return after;
    const now = await this.find(id);
    return changeRecorded(now, Number(version) + 1, changeId) ? now : null;
  }

  /**
   * A change "whatever the version" inside a change scope: it needs a known version to record where it
   * lands, so it is made conditional on the version read, and read again if that moved on.
   */
  private async changeAtCurrentVersion(
    id: string,
    changes: Changes<D>,
    system: Record<string, unknown>,
    extra: Filter<D>,
  ): Promise<D | null> {
    for (let attempt = 1; attempt <= ANY_VERSION_ATTEMPTS; attempt++) {
      const current = await this.find(id);
      if (!current || current.deletedAt !== null) return null;
      const written = await this.change(id, current._version, changes, system, undefined, extra);
      if (written) return written;
      const now = await this.find(id);
      // Not moved on: the extra condition is what failed (or it went away): the same answer as one write.
      if (!now || now.deletedAt !== null || now._version === current._version) return null;
    }
    throw new AppError('CONFLICT', 'The resource is being changed concurrently; retry.', {}, {}, { storable: false });
  }

  /** The change id a change leaving the document at `version` carries; recorded first in a change scope. */
  private async recoveryPoint(id: string, version: number, given: string | undefined): Promise<string | undefined> {
    const scope = currentChangeScope();
    const changeId = given ?? scope?.changeId;
    if (scope && changeId !== undefined)
      await scope.recoveryPoint({ collection: this.collection.collectionName, id, version, changeId });
    return changeId;
  }

  private async write<T>(id: string, operation: () => Promise<T>, cached = true): Promise<T> {
    try {
      return await operation();
    } finally {
      if (cached) this.invalidate(id);
    }
  }
}
