// Authorization, built (docs/architecture.md, "One shape for a feature"): the tuples' store and the check, each
// with its cache.
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import { AuthorizationService } from './check.js';
import { TupleRepository } from './tuples.js';

const MINUTE = 60_000;

export async function createAuthz({ db, longDb, locks, caches }: Infrastructure) {
  const tuples = new TupleRepository(db, locks, caches.cache('authz', { max: 100_000, ttlMs: MINUTE }));
  await tuples.init(longDb);
  return {
    tuples,
    service: new AuthorizationService(tuples, caches.cache('authz-granted', { max: 100_000, ttlMs: MINUTE })),
  };
}
