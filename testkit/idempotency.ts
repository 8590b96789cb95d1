// Replacing one step of a running API's idempotency store, to hold it, fail it or interleave it with another
// request's: the tests of idempotency across faults and races.
import type { IdempotencyStore } from '../api/src/shared/http/idempotency-store.js';
import type { TestApi } from './api.js';

/** Replaces one method of the running API's idempotency store until the returned function restores it. */
export function patchStore<K extends keyof IdempotencyStore>(
  api: TestApi,
  name: K,
  replacement: (original: IdempotencyStore[K]) => IdempotencyStore[K],
): () => void {
  const store = api.services.idempotencyStore as unknown as Record<string, unknown>;
  const original = (store[name] as (...args: unknown[]) => unknown).bind(store) as IdempotencyStore[K];
  store[name] = replacement(original);
  return () => {
    delete store[name];
  };
}
