// The public catalog, built (docs/architecture.md, "One shape for a feature"): the operator's snapshots and endpoint
// checks for the configured catalog, each loaded in the background, the logos' object storage, and the service
// and answers of the SDK surface.
import { zipCentroid } from '#core/catalog/geo.js';
import { EndpointHealthStore } from '#core/catalog/endpoint-health.js';
import { SnapshotStore } from '#core/catalog/snapshots.js';
import { openObjectStorage } from '#core/object-storage/index.js';
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import { ActiveCatalog } from './active.js';
import { CatalogAnswers } from './answers.js';
import { ActiveEndpointHealth } from './endpoint-health.js';
import { BrandSearchIndex } from './search/index.js';
import { CatalogService } from './service.js';

export async function createCatalog({ config, longDb, locks, clock, logger }: Infrastructure) {
  // Loaded in the background (start-up and polling), a whole snapshot at a time.
  const snapshots = new SnapshotStore(longDb, locks, clock);
  await snapshots.init();
  const storage = openObjectStorage(config.objectStorage);
  const active = new ActiveCatalog(snapshots, config.catalog, BrandSearchIndex.build, logger);
  // The operator's endpoint checks for the same catalog, published beside its snapshots (loaded in the background).
  const endpointHealth = new ActiveEndpointHealth(
    new EndpointHealthStore(longDb, locks, clock),
    config.catalog,
    logger,
  );
  // The ZIP table loads now (about 0.1 s), not on a first near= search.
  zipCentroid('00000');
  const service = new CatalogService(active, storage, endpointHealth, zipCentroid);
  return {
    snapshots,
    storage,
    active,
    endpointHealth,
    service,
    answers: new CatalogAnswers(service, config.publicBaseUrl, config.trustProxy),
  };
}
