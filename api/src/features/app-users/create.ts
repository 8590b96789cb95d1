// App users, built (docs/architecture.md, "One shape for a feature"), in two steps because the connections stand
// between them: first the users' documents (the store, with the probe's cache, and the transitions that change it),
// which features/connections builds on; then the service, given the ConnectionLifecycle the connections implement.
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import type { EventOutbox } from '../events/index.js';
import { AppUserService, type ConnectionLifecycle } from './service.js';
import { AppUserRepository } from './store.js';
import { UserTransitions } from './transitions.js';

export async function createAppUserDocuments(
  { db, longDb, locks, caches, clock, generations }: Infrastructure,
  { outbox }: { outbox: EventOutbox },
) {
  // The lifecycle probe's states, never-seen users included (they are polled the most).
  const store = new AppUserRepository(db, locks, caches.cache('app-user-states', { max: 200_000, ttlMs: 60_000 }));
  await store.init(longDb);
  return { store, transitions: new UserTransitions({ users: store, outbox, generations, clock }) };
}

export type AppUserDocuments = Awaited<ReturnType<typeof createAppUserDocuments>>;

export function createAppUsers(documents: AppUserDocuments, connections: ConnectionLifecycle): AppUserService {
  return new AppUserService({ users: documents.store, transitions: documents.transitions, connections });
}
