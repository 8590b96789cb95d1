// Conditional writes to one document, the same on MongoDB and on the embedded FerretDB. MongoDB applies
// `{_id, …conditions}` atomically. FerretDB v1 does not (it reads, then writes), and it pushes a filter down to
// SQLite only when the filter is `{_id}` alone: any other filter is evaluated over the whole collection. So
// on FerretDB the document is read by _id under its lock (locks.ts), the conditions are checked here, and
// the write is made by _id: atomic through the lock, and as fast for a large collection as for a small one.
// The conditions are one Mongo filter either way; matches() understands the subset Portico writes.
import type { Collection, Document, Filter, UpdateFilter, WithId } from 'mongodb';
import type { DocumentLocks } from './locks.js';

/** Applies `update` to the document `id` if it matches `condition`; the document after, or null. */
export async function updateOneWhere<D extends Document & { _id: string }>(
  collection: Collection<D>,
  locks: DocumentLocks,
  id: string,
  condition: Filter<D>,
  update: UpdateFilter<D>,
): Promise<WithId<D> | null> {
  const byId = { _id: id } as Filter<D>;
  if (locks.atomic) return collection.findOneAndUpdate({ ...condition, ...byId }, update, { returnDocument: 'after' });
  return locks.withLock(`${collection.collectionName}:${id}`, async () => {
    const current = await collection.findOne(byId);
    if (!current || !matches(current, condition)) return null;
    return collection.findOneAndUpdate(byId, update, { returnDocument: 'after' });
  });
}

/** Deletes the document `id` if it matches `condition`; true when it did. */
export async function deleteOneWhere<D extends Document & { _id: string }>(
  collection: Collection<D>,
  locks: DocumentLocks,
  id: string,
  condition: Filter<D>,
): Promise<boolean> {
  const byId = { _id: id } as Filter<D>;
  if (locks.atomic) return (await collection.deleteOne({ ...condition, ...byId })).deletedCount === 1;
  return locks.withLock(`${collection.collectionName}:${id}`, async () => {
    const current = await collection.findOne(byId);
    if (!current || !matches(current, condition)) return false;
    return (await collection.deleteOne(byId)).deletedCount === 1;
  });
}

type Condition = Record<string, unknown>;
const OPERATORS = new Set(['$lt', '$lte', '$gt', '$gte', '$in', '$ne', '$exists']);

/** Whether `doc` matches a filter of equalities (null also matches a missing field), comparisons, $in, $ne, $exists and
 * $or. */
export function matches(doc: Record<string, unknown>, filter: Condition): boolean {
  return Object.entries(filter).every(([key, expected]) => {
    if (key === '$or') return (expected as Condition[]).some((branch) => matches(doc, branch));
    if (key.startsWith('$')) throw new Error(`matches: unsupported operator ${key}`);
    const actual = valueAt(doc, key);
    if (isOperatorObject(expected))
      return Object.entries(expected).every(([op, operand]) => applies(op, actual, operand));
    return equal(actual, expected);
  });
}

function isOperatorObject(value: unknown): value is Condition {
  if (value === null || typeof value !== 'object' || value instanceof Date || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  if (keys.length > 0 && keys.every((k) => k.startsWith('$'))) {
    for (const k of keys) if (!OPERATORS.has(k)) throw new Error(`matches: unsupported operator ${k}`);
    return true;
  }
  return false;
}

function applies(op: string, actual: unknown, operand: unknown): boolean {
  switch (op) {
    case '$exists':
      return (actual !== undefined) === Boolean(operand);
    case '$ne':
      return !equal(actual, operand);
    case '$in':
      return (operand as unknown[]).some((value) => equal(actual, value));
    default: {
      if (actual === undefined || actual === null) return false;
      const a = comparable(actual);
      const b = comparable(operand);
      if (typeof a !== typeof b) return false;
      return op === '$lt' ? a < b : op === '$lte' ? a <= b : op === '$gt' ? a > b : a >= b;
    }
  }
}

const comparable = (value: unknown): number | string =>
  value instanceof Date ? value.getTime() : (value as number | string);

function equal(actual: unknown, expected: unknown): boolean {
  if (expected === null) return actual === null || actual === undefined;
  if (expected instanceof Date) return actual instanceof Date && actual.getTime() === expected.getTime();
  return actual === expected;
}

function valueAt(doc: Record<string, unknown>, path: string): unknown {
  let value: unknown = doc;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}
