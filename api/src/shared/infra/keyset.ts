// Keyset paging, newest first: a page of documents in (createdAt desc, id desc) order strictly after a position,
// and whether more follow. One implementation for the database (keysetPage) and one for the in-memory fakes
// (keysetSlice), so both page alike. Used by the admin lists (features/admin).
import type { Collection, Document, Filter } from 'mongodb';

/** Where a page ends: the last item's creation time and id. */
export interface KeysetPosition {
  createdAt: Date;
  id: string;
}

export interface KeysetPage<T> {
  items: T[];
  hasMore: boolean;
}

/**
 * `limit` documents matching `filter`, newest first, after `after`; `idField` names the unique tie-breaker
 * (the document's id field, which the caller's position carries).
 */
export async function keysetPage<D extends Document>(
  collection: Collection<D>,
  filter: Filter<D>,
  idField: string,
  limit: number,
  after?: KeysetPosition,
): Promise<KeysetPage<D>> {
  const position = after && {
    $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, [idField]: { $lt: after.id } }],
  };
  const docs = await collection
    .find((position ? { $and: [filter, position] } : filter) as Filter<D>)
    .sort({ createdAt: -1, [idField]: -1 })
    .limit(limit + 1)
    .toArray();
  return { items: docs.slice(0, limit) as D[], hasMore: docs.length > limit };
}

/** keysetPage over items in memory (`id` and `createdAt` read through `key`). */
export function keysetSlice<T>(
  all: readonly T[],
  key: (item: T) => KeysetPosition,
  limit: number,
  after?: KeysetPosition,
): KeysetPage<T> {
  const newestFirst = [...all].sort((a, b) => compare(key(b), key(a)));
  const rest = after ? newestFirst.filter((item) => compare(key(item), after) < 0) : newestFirst;
  return { items: rest.slice(0, limit), hasMore: rest.length > limit };
}

function compare(a: KeysetPosition, b: KeysetPosition): number {
  return a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
