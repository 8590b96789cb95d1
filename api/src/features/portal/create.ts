// The patient's own page, built (docs/connecting.md, "The patient's page"): its link store and the service behind
// the page, over the features it shows and acts through.
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import type { PortalDeps } from './service.js';
import { PortalService } from './service.js';
import { PortalSessionRepository } from './store.js';

export async function createPortal(
  { db, longDb, locks, clock }: Infrastructure,
  uses: Omit<PortalDeps, 'store' | 'clock'>,
) {
  const store = new PortalSessionRepository(db, locks);
  await store.init(longDb);
  return {
    service: new PortalService({ ...uses, store, clock }),
    // Spent and expired links are removed by the sweep, which scans the collection: the long deadline.
    sessions: new PortalSessionRepository(longDb, locks),
  };
}
