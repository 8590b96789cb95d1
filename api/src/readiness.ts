// /readyz's check (features/ops): the database and Redis asked at once, each within READINESS_DEADLINE_MS, and
// whether the catalog has loaded its first snapshot.
import type { Redis } from 'ioredis';
import type { Db } from 'mongodb';
import { pingMongo } from '#core/infra/mongo.js';
import { pingRedis } from '#core/infra/redis.js';
import type { Readiness } from './features/ops/ops.routes.js';

/** How long /readyz waits for each dependency (they are asked at once): it answers within 2 s. */
export const READINESS_DEADLINE_MS = 1500;
/** What /readyz reads a document of: a collection every deployment has, so the read reaches storage. */
const READINESS_COLLECTION = 'customer_accounts';

export function readinessOf(db: Db, redis: Redis | undefined, catalog: { readonly ready: boolean }): Readiness {
  return {
    check: async () => {
      const [mongodb, redisAnswers] = await Promise.all([
        pingMongo(db, READINESS_DEADLINE_MS, READINESS_COLLECTION),
        redis && pingRedis(redis, READINESS_DEADLINE_MS),
      ]);
      return { mongodb, ...(redisAnswers !== undefined && { redis: redisAnswers }), catalog: catalog.ready };
    },
  };
}
