// In-memory IdempotencyStore for unit tests of what runs on idempotency records; the behaviour suite
// (test/api/shared/http/idempotency-store.test.ts) holds it and MongoIdempotencyStore to the same rules
// (docs/architecture.md, "Stores and fakes", and "Idempotency is exactly once across faults"). It keeps each record
// as the repository's document is kept, so the same conditions decide: a claim wins unless a live record exists,
// every later step is the owner's alone and increments `revision`, a hand-back names its owner in `releasedBy`
// (never a deletion), and a take-over changes the owner, lease and claimant's fingerprint but never the state or
// the recovery points. Writes here never land late, so what the repository's shape guards against cannot happen.
import type { RecoveryPoint } from '../infra/change-scope.js';
import type { DoneRecord, IdempotencyRecord, IdempotencyStore, Judged, RunningRecord } from './idempotency-store.js';

/** The repository's RecordDocument, with times as epoch milliseconds. */
interface Stored {
  state: 'running' | 'done';
  fingerprint: string;
  expiresAt: number;
  owner?: string;
  leaseUntil?: number;
  targets?: RecoveryPoint[];
  sealed?: string;
  releasedBy?: string;
  claimFingerprint?: string;
  revision?: number;
}

export interface FakeIdempotencyStoreOptions {
  /**
   * Whether the change a recovery point announced happened. The fake holds no other store's documents, which the
   * repository reads to tell: by default nothing a claim announced happened.
   */
  reached?: (target: RecoveryPoint) => boolean | Promise<boolean>;
}

export class FakeIdempotencyStore implements IdempotencyStore {
  private readonly records = new Map<string, Stored>();
  private readonly isReached: (target: RecoveryPoint) => boolean | Promise<boolean>;

  constructor(options: FakeIdempotencyStoreOptions = {}) {
    this.isReached = options.reached ?? (() => false);
  }

  async claim(scope: string, running: RunningRecord, now: number): Promise<IdempotencyRecord | null> {
    const current = this.records.get(scope);
    // Liveness is the record's own expiresAt; an expired one is as good as absent (the repository deletes it).
    if (current && current.expiresAt > now) return toRecord(current);
    const { fingerprint, owner, leaseUntil, expiresAt, targets } = running;
    this.records.set(scope, {
      state: 'running',
      fingerprint,
      owner,
      leaseUntil,
      expiresAt,
      targets: structuredClone(targets),
    });
    return null;
  }

  async takeOver(scope: string, judged: Judged, running: RunningRecord): Promise<boolean> {
    const revision = judged.revision ?? 0;
    return this.write(
      scope,
      (r) =>
        r.state === 'running' &&
        r.owner === judged.owner &&
        r.leaseUntil === judged.leaseUntil &&
        (revision === 0 ? r.revision === undefined : r.revision === revision),
      (r) => {
        Object.assign(r, {
          owner: running.owner,
          leaseUntil: running.leaseUntil,
          expiresAt: running.expiresAt,
          claimFingerprint: running.fingerprint,
        });
        delete r.releasedBy;
      },
    );
  }

  async addTarget(scope: string, owner: string, target: RecoveryPoint, leaseUntil: number): Promise<boolean> {
    return this.write(scope, ownedBy(owner), (r) => {
      r.targets = [...(r.targets ?? []), structuredClone(target)];
      r.leaseUntil = leaseUntil;
    });
  }

  async renew(scope: string, owner: string, leaseUntil: number): Promise<boolean> {
    return this.write(scope, ownedBy(owner), (r) => (r.leaseUntil = leaseUntil));
  }

  async complete(scope: string, owner: string, done: DoneRecord): Promise<boolean> {
    return this.write(scope, ownedBy(owner), (r) => {
      Object.assign(r, {
        state: 'done',
        fingerprint: done.fingerprint,
        sealed: done.sealed,
        expiresAt: done.expiresAt,
      });
      for (const field of ['owner', 'leaseUntil', 'targets', 'releasedBy', 'claimFingerprint'] as const)
        delete r[field];
    });
  }

  async release(scope: string, owner: string): Promise<boolean> {
    return this.write(scope, ownedBy(owner), (r) => (r.releasedBy = owner));
  }

  async reached(target: RecoveryPoint): Promise<boolean> {
    return this.isReached(target);
  }

  async sweep(now: number, limit: number): Promise<number> {
    const expired = [...this.records].filter(([, r]) => r.expiresAt <= now).slice(0, limit);
    for (const [scope] of expired) this.records.delete(scope);
    return expired.length;
  }

  /** A conditional write to one record, which increments its revision, as every write to a claim does. */
  private write(scope: string, condition: (record: Stored) => boolean, change: (record: Stored) => void): boolean {
    const record = this.records.get(scope);
    if (!record || !condition(record)) return false;
    change(record);
    record.revision = (record.revision ?? 0) + 1;
    return true;
  }
}

const ownedBy =
  (owner: string) =>
  (record: Stored): boolean =>
    record.state === 'running' && record.owner === owner;

/** As the repository reads a document: a hand-back counts only while its owner still holds the claim. */
function toRecord(r: Stored): IdempotencyRecord {
  if (r.state === 'done')
    return { state: 'done', fingerprint: r.fingerprint, sealed: r.sealed ?? '', expiresAt: r.expiresAt };
  const released = r.releasedBy !== undefined && r.releasedBy === r.owner;
  return {
    state: 'running',
    fingerprint: r.claimFingerprint ?? r.fingerprint,
    owner: r.owner ?? '',
    leaseUntil: r.leaseUntil ?? 0,
    expiresAt: r.expiresAt,
    targets: structuredClone(r.targets ?? []),
    revision: r.revision ?? 0,
    ...(released && { released: true }),
  };
}
