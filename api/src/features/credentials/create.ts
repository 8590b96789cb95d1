// API keys, built (docs/architecture.md, "One shape for a feature"): the store, with its cache.
import { KEY_CACHE_TTL_MS, KEY_MISS_TTL_MS } from '../../shared/http/keys.js';
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import { ApiKeyRepository } from './store.js';

export async function createCredentials({ db, longDb, locks, caches }: Infrastructure) {
  // Short: a revocation made where no Redis carries it (the command line) still lands within 10 s.
  const store = new ApiKeyRepository(
    db,
    locks,
    caches.cache('api-keys', { max: 10_000, ttlMs: KEY_CACHE_TTL_MS, missTtlMs: KEY_MISS_TTL_MS }),
  );
  await store.init(longDb);
  return { store };
}
