// Customer accounts, built (docs/architecture.md, "One shape for a feature"): the store, with its cache.
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import { CustomerAccountRepository } from './store.js';

export async function createAccounts({ db, longDb, locks, caches }: Infrastructure) {
  // 10 s, like keys: bounds how long `portico admin update-account` run without REDIS_URL takes to reach running
  // replicas.
  const store = new CustomerAccountRepository(db, locks, caches.cache('accounts', { max: 10_000, ttlMs: 10_000 }));
  await store.init(longDb);
  return { store };
}
