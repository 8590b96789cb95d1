// A connection's head (bundle-heads.ts): its document, what a reader and a writer hold of it, and how long its lists
// keep a generation (and the records of those kept).
//
// observation_heads, one document per connection that has had a bundle:
//   _version   the last committed generation (every bundle is one generation: 1, 2, ...)
//   _changes   the change ids of the last commits by generation modulo CHANGE_RING (a request's recovery point)
//   next       the last generation handed out
//   writer     {token, until}: the lease of the one bundle being written (bundles of a connection go one at a time)
//   abandoned  [{gen, at, cleaned?}]: generations handed out and never committed (their writer died or lost its
//              lease): what they wrote stays invisible, and is deleted once no writer of theirs can still be at
//              work (cleaned); the entry stays for as long as a retry may ask whether the generation committed
//   pending    [{gen, at}]: committed bundles that replace observations and are still being applied in place
//              (readers lay the bundle's record over what they read, features/clinical/records/store.ts)
//   kept       [{gen, at}]: committed bundles, applied, whose record is kept a while for readers that began before
//   applier    {token, until}: the lease of the one process applying pending bundles, in the order committed (a
//              replacement is a write by _id alone, the only lookup the embedded database does not scan for, so
//              the order is kept by applying one bundle after another, not by a condition on each write)
//   stamp      changes with every write that changes the lists: the lists are rewritten whole, conditioned on
//              it (the embedded database ignores $pull with a condition)
import { REPLAY_WINDOW_MS } from '../../../shared/http/idempotency.js';

export const HEADS = 'observation_heads';

/**
 * How long an abandoned generation's leftovers, and an applied bundle's record, are kept: by then no writer of
 * that generation can be at work, and no reader that began before the bundle was applied is still reading.
 */
export const KEPT_MS = 15 * 60_000;
/**
 * How long a generation that never committed stays listed: beyond the idempotency replay window, so that a retry
 * of its request learns from the head that it did not commit (committedGeneration).
 */
export const ABANDONED_LISTED_MS = REPLAY_WINDOW_MS + 60 * 60_000;

export interface Generation {
  gen: number;
  at: Date;
  /** An abandoned generation's leftovers are deleted. */
  cleaned?: boolean;
  /** A kept generation replaced observations (it was pending). */
  replaced?: boolean;
}

export interface HeadDocument {
  _id: string;
  _version: number;
  _changes?: Record<string, string>;
  next: number;
  writer: { token: string; until: Date } | null;
  abandoned: Generation[];
  pending: Generation[];
  kept: Generation[];
  applier?: { token: string; until: Date } | null;
  stamp: string;
  /** Set once a full sync removed a record of the connection (a tombstone: document.ts, `removed`). */
  removals?: boolean;
}

/** What a reader needs of a connection's head. */
export interface Visibility {
  /** The last committed generation: observations first written by a later one are not shown yet. */
  committed: number;
  /** Generations never committed: what they wrote is never shown. */
  abandoned: number[];
  /** Committed bundles being applied in place: their records are laid over what is read. */
  pending: Generation[];
  /** Applied bundles whose records are still kept. */
  kept: Generation[];
}

/** A writer's hold on a connection: its generation, and the head as it found it. */
export interface WriterLease {
  connectionId: string;
  gen: number;
  token: string;
  /** The generations abandoned, and not yet cleaned, when the lease was taken (their leftovers may be in the way). */
  abandoned: number[];
  /** Whether a record of the connection was ever removed (then a replaced record may be a tombstone brought back). */
  removals: boolean;
}
