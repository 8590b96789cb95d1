// Limits on what one endpoint's owner can make Portico send (a webhook URL may name any public host, so these
// bound what a tenant could aim at a third party): a recover runs one at a time per endpoint and at most 10
// times an hour; a test event at most 10 times a minute. Buckets are shared by replicas through Redis when it
// is configured; the one-at-a-time rule is a lease document in the database, so it holds across replicas
// either way and a replica that dies mid-recover frees it when the lease ends.
import { randomUUID } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import type { Clock } from '#core/clock.js';
import type { DocumentLocks } from '#core/infra/locks.js';
import { deleteOneWhere } from '#core/infra/where.js';
import { AppError } from '../../shared/http/errors.js';
import { rateLimited, type RateLimiter, type RatePolicy } from '../../shared/infra/rate-limit.js';
import { isDuplicateKey } from '#core/infra/mongo.js';

export const RECOVER_POLICY: RatePolicy = Object.freeze({ capacity: 10, windowMs: 3_600_000, name: 'recover' });
export const TEST_POLICY: RatePolicy = Object.freeze({ capacity: 10, windowMs: 60_000, name: 'test' });
/** Longer than a recover of 14 days of events takes; only a replica that died leaves one to run out. */
const RECOVER_LEASE_MS = 10 * 60_000;

interface RunDocument {
  _id: string;
  owner: string;
  until: Date;
}

export interface EndpointOperationLimitsDeps {
  db: Db;
  locks: DocumentLocks;
  recover: RateLimiter;
  test: RateLimiter;
  clock: Clock;
}

export class EndpointOperationLimits {
  private readonly runs: Collection<RunDocument>;

  constructor(private readonly deps: EndpointOperationLimitsDeps) {
    this.runs = deps.db.collection<RunDocument>('webhook_recover_runs');
  }

  /** Takes a test-event token of the endpoint; 429 when its bucket is empty. */
  async test(accountId: string, endpointId: string): Promise<void> {
    const decision = await this.deps.test.take(`${accountId}\n${endpointId}`);
    if (!decision.allowed)
      throw rateLimited(
        `At most ${TEST_POLICY.capacity} test events a minute per webhook endpoint; retry after the time given.`,
        TEST_POLICY,
        decision,
      );
  }

  /** Runs `work` as the endpoint's only recover: 409 while another runs, 429 past 10 an hour (nothing runs then). */
  async recover<T>(accountId: string, endpointId: string, work: () => Promise<T>): Promise<T> {
    const owner = randomUUID();
    await this.lease(endpointId, owner);
    try {
      const decision = await this.deps.recover.take(`${accountId}\n${endpointId}`);
      if (!decision.allowed)
        throw rateLimited(
          `At most ${RECOVER_POLICY.capacity} recovers an hour per webhook endpoint; retry after the time given.`,
          RECOVER_POLICY,
          decision,
        );
      return await work();
    } finally {
      await deleteOneWhere(this.runs, this.deps.locks, endpointId, { owner }).catch(() => undefined); // else the lease ends by itself
    }
  }

  private async lease(endpointId: string, owner: string): Promise<void> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const now = this.deps.clock.now();
      try {
        await this.runs.insertOne({ _id: endpointId, owner, until: new Date(now.getTime() + RECOVER_LEASE_MS) });
        return;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      // Held: by a running recover, or by one whose replica died (its lease has ended: it goes).
      if (!(await deleteOneWhere(this.runs, this.deps.locks, endpointId, { until: { $lt: now } }))) break;
    }
    // Not replayed by idempotency: a retry after the other recover has finished may run.
    throw new AppError(
      'CONFLICT',
      'A recover of this webhook endpoint is already running; retry when it has finished.',
      {},
      { 'Retry-After': '5' },
      { storable: false },
    );
  }
}
