// The connections every Portico process opens the same way: MongoDB (MONGODB_URI, else the embedded
// database, started if no process has yet) and Redis when REDIS_URL is set. close() undoes all of it.
import type { Redis } from 'ioredis';
import type { CoreConfig } from '../config.js';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './devdb.js';
import { connectMongo, type Mongo } from './mongo.js';
import { connectRedis } from './redis.js';

export interface OpenConnections {
  mongo: Mongo;
  /** The MongoDB URI in use, naming the database: what another process needs to reach the same data. */
  mongodbUri: string;
  redis: Redis | undefined;
  /** Set when the embedded database is in use. */
  embedded: EmbeddedDatabase | undefined;
  close(): Promise<void>;
}

export async function openConnections(
  config: CoreConfig,
  log: (message: string) => void,
  /** false: an embedded database must already be running (see EmbeddedDatabaseOptions.start). */
  startDatabase = true,
): Promise<OpenConnections> {
  let embedded: EmbeddedDatabase | undefined;
  const uri =
    config.mongodbUri ??
    (embedded = await startEmbeddedDatabase({
      port: config.devdbPort,
      dataDir: config.dataDir,
      cacheDir: config.cacheDir,
      log,
      start: startDatabase,
    })).uri;
  const mongo = await connectMongo(uri, config.mongodbDatabase, {
    timeoutMs: config.mongodbTimeoutMs,
    longTimeoutMs: config.mongodbLongTimeoutMs,
  });
  const redis = config.redisUrl ? await connectRedis(config.redisUrl, config.redisTimeoutMs) : undefined;
  return {
    mongo,
    mongodbUri: config.mongodbUri ?? `${uri}${encodeURIComponent(config.mongodbDatabase)}`,
    redis,
    embedded,
    async close() {
      await mongo.close();
      await redis?.quit().catch(() => {});
      await embedded?.stop();
    },
  };
}
