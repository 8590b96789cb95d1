// Ties an idempotent request to the changes it makes (Stripe's "recovery points"). The idempotency
// middleware runs the handler inside a change scope whose change id is the request's claim owner; every
// write made in it records, BEFORE it is made, where it will leave its mark (a recovery point appended to
// the running idempotency record), and then writes that change id into the document with the change itself.
// After a crash, anyone can tell from the documents alone whether the request changed anything. This module is
// the one place that answers "did this change land?": a versioned change (changeRecorded), a plain write
// (its change field), a committed generation (committedGeneration), any of them by recovery point.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Db } from 'mongodb';

/**
 * Where a change leaves its change id: a versioned change in the `_changes` ring at `version`
 * (changeRecorded), or, for a plain insert or update, `field` of the document equal to `changeId`.
 */
export interface RecoveryPoint {
  collection: string;
  id: string;
  changeId: string;
  version?: number;
  field?: string;
  /**
   * `version` is a generation of a document that commits generations one at a time and lists those that never committed
   * in `abandoned` (a connection's head, api/src/features/clinical/records/bundle-heads.ts): committedGeneration decides.
   */
  generation?: boolean;
}

/** How many recent changes a document remembers the ids of. */
export const CHANGE_RING = 16;

/** Whether the change `changeId`, which left the document at `version`, is recorded in it. */
export function changeRecorded(
  doc: { _version?: number; _changes?: Record<string, string> } | null,
  version: number,
  changeId: string,
): boolean {
  return doc !== null && (doc._version ?? 0) >= version && doc._changes?.[String(version % CHANGE_RING)] === changeId;
}

/** The field plain (unversioned) writes carry the change id in. */
export const CHANGE_FIELD = '_changeId';

export interface ChangeScope {
  readonly changeId: string;
  /** Records the point durably before the write; throws (and the write must not happen) when it cannot. */
  recoveryPoint(point: RecoveryPoint): Promise<void>;
  /** False once the request is over: late work that inherited the scope writes outside it. */
  readonly active: boolean;
}

const storage = new AsyncLocalStorage<ChangeScope>();

export function runInChangeScope<T>(scope: ChangeScope, work: () => Promise<T>): Promise<T> {
  return storage.run(scope, work);
}

/** The scope of the request this code runs for, if any. */
export function currentChangeScope(): ChangeScope | undefined {
  const scope = storage.getStore();
  return scope?.active ? scope : undefined;
}

/** Runs `work` outside any change scope: background work a request merely wakes (dispatchers). */
export function outsideChangeScope<T>(work: () => T): T {
  return storage.exit(work);
}

/**
 * For a plain write of document `id` in `collection`: records the recovery point first and returns the
 * fields that mark the document with the change id ({} outside a scope).
 */
export async function markPlainWrite(
  collection: string,
  id: string,
  field = CHANGE_FIELD,
): Promise<Record<string, string>> {
  const scope = currentChangeScope();
  if (!scope) return {};
  await scope.recoveryPoint({ collection, id, changeId: scope.changeId, field });
  return { [field]: scope.changeId };
}

/** Whether the change a recovery point announced is in the database. */
export async function recoveryPointReached(db: Db, point: RecoveryPoint): Promise<boolean> {
  const doc = await db
    .collection<{ _id: string } & Record<string, unknown>>(point.collection)
    .findOne({ _id: point.id });
  if (!doc) return false;
  if (point.generation && point.version !== undefined)
    return committedGeneration(doc as { _version?: number; abandoned?: { gen: number }[] }, point.version);
  if (point.version !== undefined)
    return changeRecorded(
      doc as { _version?: number; _changes?: Record<string, string> },
      point.version,
      point.changeId,
    );
  return doc[point.field ?? CHANGE_FIELD] === point.changeId;
}

/**
 * Whether generation `gen` of such a document committed: every generation up to `_version` either committed or
 * is listed in `abandoned` (its writer lists all those handed out since the last commit when it takes over), and
 * abandoned ones stay listed for longer than a retry can ask. (A `_changes` ring alone would forget a commit
 * after CHANGE_RING later ones.)
 */
export function committedGeneration(
  doc: { _version?: number; abandoned?: { gen: number }[] } | null,
  gen: number,
): boolean {
  return doc !== null && (doc._version ?? 0) >= gen && !(doc.abandoned ?? []).some((a) => a.gen === gen);
}
