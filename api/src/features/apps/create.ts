// Apps, built (docs/architecture.md, "One shape for a feature"): the store, with its cache.
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import { AppRepository } from './store.js';

export async function createApps({ db, longDb, locks, caches }: Infrastructure) {
  // 10 s, like accounts: how long `portico admin update-app` run without REDIS_URL takes to reach running replicas.
  const store = new AppRepository(db, locks, caches.cache('apps', { max: 10_000, ttlMs: 10_000 }));
  await store.init(longDb);
  return { store };
}
