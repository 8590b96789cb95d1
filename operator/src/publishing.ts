// What publishing a catalog needs, opened the same way by the controller (`portico-operator run`) and the
// command line (`import -f`): the database with its snapshot and endpoint-health stores, object storage, and
// the Redis announcements that tell API replicas at once.
import { announceActivation, announceHealth } from '#core/catalog/announce.js';
import { EndpointHealthStore } from '#core/catalog/endpoint-health.js';
import { SnapshotStore, type CatalogRef } from '#core/catalog/snapshots.js';
import { systemClock } from '#core/clock.js';
import type { CoreConfig } from '#core/config.js';
import { openConnections } from '#core/infra/connections.js';
import { pingMongo } from '#core/infra/mongo.js';
import { documentLocksFor } from '#core/infra/locks.js';
import { openObjectStorage, type ObjectStorage } from '#core/object-storage/index.js';

export interface Publishing {
  store: SnapshotStore;
  healthStore: EndpointHealthStore;
  storage: ObjectStorage;
  /** Set when REDIS_URL is: tells every API replica that a snapshot was activated. */
  announce?: (ref: CatalogRef, snapshotId: string) => Promise<void>;
  /** Set when REDIS_URL is: tells every API replica that endpoint health was published. */
  announceHealth?: (ref: CatalogRef, version: string) => Promise<void>;
  /** Whether the database answers within its deadline (the leader's readiness). */
  ping(): Promise<boolean>;
  close: () => Promise<void>;
}

export async function openPublishing(config: CoreConfig, log: (message: string) => void): Promise<Publishing> {
  const connections = await openConnections(config, log);
  const { mongo, redis } = connections;
  try {
    // Publishing writes, reads and prunes whole snapshots in the background: the deadline of long operations.
    const locks = await documentLocksFor(mongo.db, redis);
    const store = new SnapshotStore(mongo.longDb, locks, systemClock);
    await store.init();
    return {
      store,
      healthStore: new EndpointHealthStore(mongo.longDb, locks, systemClock),
      storage: openObjectStorage(config.objectStorage),
      ...(redis && {
        announce: (ref: CatalogRef, id: string) => announceActivation(redis, ref, id),
        announceHealth: (ref: CatalogRef, version: string) => announceHealth(redis, ref, version),
      }),
      ping: () => pingMongo(mongo.db),
      close: () => connections.close(),
    };
  } catch (error) {
    await connections.close();
    throw error;
  }
}
