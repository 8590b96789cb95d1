// The Redis channels on which a publisher (the operator, `portico-operator import`) tells every API replica
// that a catalog's active snapshot moved, or that its endpoint health was published; replicas that miss a
// message find the change by polling MongoDB.
import type { Redis } from 'ioredis';
import { catalogKey, type CatalogRef } from './snapshots.js';

export const CATALOG_CHANNEL = 'portico:catalog-activated';

export interface CatalogActivation {
  catalog: string;
  snapshotId: string;
}

/** Tells every replica (over Redis) that a catalog's active snapshot moved. */
export async function announceActivation(redis: Redis, ref: CatalogRef, snapshotId: string): Promise<void> {
  await redis.publish(
    CATALOG_CHANNEL,
    JSON.stringify({ catalog: catalogKey(ref), snapshotId } satisfies CatalogActivation),
  );
}

/** The activation a message announces; undefined for anything else on the channel. */
export function parseActivation(message: string): CatalogActivation | undefined {
  try {
    const parsed = JSON.parse(message) as Partial<CatalogActivation>;
    return typeof parsed.catalog === 'string' && typeof parsed.snapshotId === 'string'
      ? { catalog: parsed.catalog, snapshotId: parsed.snapshotId }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The channel on which the operator tells every API replica that a catalog's endpoint health was published
 * (core/src/catalog/endpoint-health.ts); replicas that miss a message find it by polling, as with snapshots.
 */
export const HEALTH_CHANNEL = 'portico:catalog-health';

export interface HealthPublication {
  catalog: string;
  version: string;
}

export async function announceHealth(redis: Redis, ref: CatalogRef, version: string): Promise<void> {
  await redis.publish(
    HEALTH_CHANNEL,
    JSON.stringify({ catalog: catalogKey(ref), version } satisfies HealthPublication),
  );
}

/** The publication a message announces; undefined for anything else on the channel. */
export function parseHealthPublication(message: string): HealthPublication | undefined {
  try {
    const parsed = JSON.parse(message) as Partial<HealthPublication>;
    return typeof parsed.catalog === 'string' && typeof parsed.version === 'string'
      ? { catalog: parsed.catalog, version: parsed.version }
      : undefined;
  } catch {
    return undefined;
  }
}
