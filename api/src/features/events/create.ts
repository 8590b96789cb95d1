// Events, built (docs/architecture.md, "Outbox"): the outbox services record their events through, the queue and
// recovery the dispatcher works from, and the signals that wake the dispatchers. The dispatcher works in the
// background and scans and purges whole collections, so its parts have the deadline of long operations; requests
// use the others.
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import { MongoEventQueue } from './event-queue.js';
import { createOutboxIndexes } from './outbox-collection.js';
import { OutboxRecovery } from './outbox-recovery.js';
import { Outbox } from './outbox.js';
import { WorkSignals } from './signals.js';

export async function createEvents({ db, longDb, locks, clock, redis }: Infrastructure) {
  await createOutboxIndexes(longDb);
  // Events committed here wake the dispatchers: this replica's at once, the others' over Redis.
  const signals = new WorkSignals(redis);
  const outbox = new Outbox(db, locks, clock, { announcer: signals });
  // What the dispatcher hands back (a lease given up) or recovery commits wakes the dispatchers as committed events do.
  const background = {
    outbox: new Outbox(longDb, locks, clock, { announcer: signals }),
    queue: new MongoEventQueue(longDb, locks, clock, { announcer: signals }),
    recovery: new OutboxRecovery(longDb, locks, { announcer: signals }),
  };
  return {
    /** Where services record their events, with their change. */
    outbox,
    signals,
    /** The dispatcher's: with the deadline of long operations. */
    background,
    /** Dispatched events as a request reads them (a webhook endpoint's recover), with the requests' deadline. */
    queue: new MongoEventQueue(db, locks, clock),
  };
}

export type Events = Awaited<ReturnType<typeof createEvents>>;
