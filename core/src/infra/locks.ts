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
// released, by its own token (never someone else's lock), as soon as Redis answers again, a few times over, since the
// stalled command may be read a moment after the first answer.
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
/** How often unanswered acquisitions are released, and how many answers each gets before it is forgotten. */
const SWEEP_MS = 200;
const SWEEP_ANSWERS = 3;
/** An unanswered acquisition older than this is forgotten (its TTL ran out long ago, wherever it landed). */
const SWEEP_GIVE_UP_MS = 10 * 60_000;
const MAX_UNANSWERED = 10_000;

interface Unanswered {
  name: string;
  token: string;
  since: number;
  answers: number;
}

export class RedisLocks implements DocumentLocks {
  readonly atomic = false;
  private readonly unanswered = new Map<string, Unanswered>();
  private sweeping: NodeJS.Timeout | undefined;

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
        this.releaseWhenAnswering(name, token);
        throw new DependencyUnavailableError('Redis', { cause: error, beforeWrite: true });
      }
      if (acquired === 'OK') break;
      if (Date.now() > deadline) throw new DependencyUnavailableError('a write lock', { beforeWrite: true });
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
    this.unanswered.set(token, { name, token, since: Date.now(), answers: 0 });
    this.sweeping ??= setTimeout(() => void this.sweep(), this.sweepMs);
    this.sweeping.unref();
  }

  private async sweep(): Promise<void> {
    const now = Date.now();
    await Promise.all(
      [...this.unanswered.values()].map(async (entry) => {
        try {
          await this.redis.eval(RELEASE, 1, entry.name, entry.token);
          entry.answers += 1;
        } catch {
          // still away: the next round
        }
        if (entry.answers >= SWEEP_ANSWERS || now - entry.since > SWEEP_GIVE_UP_MS) this.unanswered.delete(entry.token);
      }),
    );
    this.sweeping = this.unanswered.size > 0 ? setTimeout(() => void this.sweep(), this.sweepMs) : undefined;
    this.sweeping?.unref();
  }
}

/** Chooses by what the database is: locks only where FerretDB needs them. */
export async function documentLocksFor(db: Db, redis?: Redis): Promise<DocumentLocks> {
  const info = await db.admin().command({ buildInfo: 1 });
  if (!('ferretdbVersion' in info)) return noLocks;
  return redis ? new RedisLocks(redis) : processLocks;
}
