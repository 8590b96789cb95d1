// The Redis channel on which a publisher (the operator, `portico-operator import`) tells every API replica
// that a catalog's active snapshot moved; replicas that miss a message find the change by polling MongoDB.
import type { Redis } from 'ioredis';
import { catalogKey, type CatalogRef } from './snapshots.js';

export const CATALOG_CHANNEL = 'portico:catalog-activated';

export interface CatalogActivation {
  catalog: string;
  snapshotId: string;
}

/** Tells every replica (over Redis) that a catalog's active snapshot moved. */
export async function announceActivation(redis: Redis, ref: CatalogRef, snapshotId: string): Promise<void> {
  await redis.publish(CATALOG_CHANNEL, JSON.stringify({ catalog: catalogKey(ref), snapshotId } satisfies CatalogActivation));
}

/** The activation a message announces; undefined for anything else on the channel. */
export function parseActivation(message: string): CatalogActivation | undefined {
  try {
    const parsed = JSON.parse(message) as Partial<CatalogActivation>;
    return typeof parsed.catalog === 'string' && typeof parsed.snapshotId === 'string' ? { catalog: parsed.catalog, snapshotId: parsed.snapshotId } : undefined;
  } catch {
    return undefined;
  }
}
