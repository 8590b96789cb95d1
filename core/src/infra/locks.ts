// Serialises writes to one document where the database cannot. MongoDB applies a filtered update
// atomically, so there nothing is needed. FerretDB v1 (the embedded database) evaluates the filter and
// writes in separate steps: concurrent `$inc`s are lost and two `{_version: 1}` updates can both win. On
// FerretDB every read-modify-write therefore runs under a lock per document: across replicas through Redis
// when it is configured, else within this process (the embedded database serves one API process).
//
// A lock whose SET went unanswered (Redis stalled past the command's deadline) may still be granted: the command
// waits in a buffer that Redis reads when it resumes, after its caller gave up. Nobody would release that lock, and
// every write to the document would wait out its whole TTL after Redis was back (an idempotency claim's hand-back
// among them: the key stayed IDEMPOTENCY_KEY_IN_USE for ten seconds). So each such acquisition is remembered and
// released, by its own token (never someone else's lock), as soon as Redis answers again, and again for a while
// (sweep(), below).
import { AsyncResource } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Db } from 'mongodb';
import { DependencyUnavailableError } from '../errors.js';

export interface DocumentLocks {
  /** True where the database applies a filtered update atomically (MongoDB), so no lock is taken. */
  readonly atomic: boolean;
  /** Runs `write` while no other write to `key` (collection + _id) runs. */
  withLock<T>(key: string, write: () => Promise<T>): Promise<T>;
}

export const noLocks: DocumentLocks = { atomic: true, withLock: (_key, write) => write() };

/** One process-wide queue per key: every repository instance in the process shares it. */
const queues = new Map<string, Promise<unknown>>();

export const processLocks: DocumentLocks = {
  atomic: false,
  async withLock<T>(key: string, write: () => Promise<T>): Promise<T> {
    const previous = queues.get(key) ?? Promise.resolve();
    const run = previous.then(write, write);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    queues.set(key, settled);
    try {
      return await run;
    } finally {
      if (queues.get(key) === settled) queues.delete(key);
    }
  },
};

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
/** How often unanswered acquisitions are released. */
const SWEEP_MS = 200;
/** An unanswered acquisition Redis never answers for this long is forgotten (unreachable; its TTL ends it anyway). */
const SWEEP_GIVE_UP_MS = 10 * 60_000;
const MAX_UNANSWERED = 10_000;
/** What ioredis says of a command it refused without sending (not connected, no offline queue): nothing to release. */
const NEVER_SENT = "Stream isn't writeable";

interface Unanswered {
  name: string;
  token: string;
  since: number;
  /** When Redis first answered its release. */
  answeredAt?: number;
}

export class RedisLocks implements DocumentLocks {
  readonly atomic = false;
  private readonly unanswered = new Map<string, Unanswered>();
  private sweeping: NodeJS.Timeout | undefined;
  /** The sweep runs in the context this was made in, not in that of the request whose lock went unanswered. */
  private readonly scheduleSweep = AsyncResource.bind(() => {
    this.sweeping = setTimeout(() => void this.sweep(), this.sweepMs);
    this.sweeping.unref();
  });

  constructor(
    private readonly redis: Redis,
    private readonly ttlMs = 10_000,
    private readonly waitMs = 5_000,
    private readonly sweepMs = SWEEP_MS,
  ) {}

  async withLock<T>(key: string, write: () => Promise<T>): Promise<T> {
    const name = `portico:lock:${key}`;
    const token = randomUUID();
    const deadline = Date.now() + this.waitMs;
    for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
      let acquired: string | null;
      try {
        acquired = await this.redis.set(name, token, 'PX', this.ttlMs, 'NX');
      } catch (error) {
        if (!(error instanceof Error && error.message.startsWith(NEVER_SENT))) this.releaseWhenAnswering(name, token);
        throw new DependencyUnavailableError('Redis', { cause: error, lockNotTaken: key });
      }
      if (acquired === 'OK') break;
      if (Date.now() > deadline) throw new DependencyUnavailableError('a write lock', { lockNotTaken: key });
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    try {
      return await write();
    } finally {
      await this.redis.eval(RELEASE, 1, name, token).catch(() => this.releaseWhenAnswering(name, token));
    }
  }

  /** How many unanswered acquisitions wait to be released (tests, diagnostics). */
  get pendingReleases(): number {
    return this.unanswered.size;
  }

  /** Releases the lock `token` may hold once Redis answers, in the background (see the top of this file). */
  private releaseWhenAnswering(name: string, token: string): void {
    if (this.unanswered.size >= MAX_UNANSWERED) return; // a TTL still ends each of them
    this.unanswered.set(token, { name, token, since: Date.now() });
    if (!this.sweeping) this.scheduleSweep();
  }

  /**
   * One round: every remembered acquisition's release, in one pipeline. Redis runs a connection's commands in order,
   * so an answer means the stalled SET was read first; but one sent on a connection that was since replaced may still
   * be read after it, so each is released again every round for a lock's TTL after Redis first answered (one read
   * later still holds its document for its TTL, as every unanswered lock did before this sweep).
   */
  private async sweep(): Promise<void> {
    const now = Date.now();
    const entries = [...this.unanswered.values()];
    // Not connected: the commands would fail unsent; the next round tries.
    if (this.redis.status === 'ready' && entries.length > 0) {
      const pipeline = this.redis.pipeline();
      for (const entry of entries) pipeline.eval(RELEASE, 1, entry.name, entry.token);
      const results = await pipeline.exec().catch(() => null);
      entries.forEach((entry, index) => {
        if (results?.[index] && results[index][0] === null) entry.answeredAt ??= now;
      });
    }
    for (const entry of entries) {
      const done = entry.answeredAt !== undefined && now - entry.answeredAt >= this.ttlMs;
      if (done || now - entry.since > SWEEP_GIVE_UP_MS) this.unanswered.delete(entry.token);
    }
    this.sweeping = undefined;
    if (this.unanswered.size > 0) this.scheduleSweep();
  }
}

/** Chooses by what the database is: locks only where FerretDB needs them. */
export async function documentLocksFor(db: Db, redis?: Redis): Promise<DocumentLocks> {
  const info = await db.admin().command({ buildInfo: 1 });
  if (!('ferretdbVersion' in info)) return noLocks;
  return redis ? new RedisLocks(redis) : processLocks;
}
