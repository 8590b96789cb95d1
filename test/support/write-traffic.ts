// Steady concurrent writes with idempotency keys, as careful clients behind a load balancer send them: new
// patient creations start at a steady rate whatever became of the earlier ones (open loop, up to a bound
// in flight), each under a key of its own; an attempt goes to the replicas in turn, and a retryable answer (503, 409 IDEMPOTENCY_KEY_IN_USE, 429, a refused or cut
// connection) is retried with the same key and body on the next replica, after an exponential backoff with
// jitter (250 ms doubling up to 4 s, never sooner than Retry-After), until the operation is decided or the
// client gives up. Every attempt is recorded with its timing, so a
// fault test can say what was answered, how, how fast, and when the service recovered.
import { randomUUID } from 'node:crypto';
import type { Replica } from './replicas.js';

export type AttemptOutcome = number | 'connection' | 'timeout';

export interface Attempt {
  replica: string;
  /** Milliseconds since the epoch. */
  start: number;
  end: number;
  outcome: AttemptOutcome;
  /** The problem's code, for an error status. */
  code?: string;
  retryable: boolean;
  /** The first attempt of its key (a new operation, not a retry). */
  first: boolean;
  /** Its Retry-After header, if any. */
  retryAfter?: string;
}

export type KeyResult = 'created' | 'executed' | 'failed' | 'gave-up';

export interface Operation {
  key: string;
  /** Unique per operation: how the test finds what it created in the database. */
  email: string;
  attempts: Attempt[];
  result?: KeyResult;
  patientId?: string;
}

export interface TrafficOptions {
  replicas: readonly Replica[];
  /** A secret key with patient:write. */
  credential: string;
  /** New operations per second. */
  rate: number;
  /** No new operation starts while this many are still undecided. */
  maxInFlight: number;
  /** An attempt unanswered after this long is recorded as 'timeout' (and fails the fault test). */
  attemptTimeoutMs: number;
  /** A client stops retrying an operation after this long. */
  giveUpMs: number;
}

const PATIENTS = '/api/platform/v1/patients';
const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 4_000;

export class WriteTraffic {
  readonly operations: Operation[] = [];
  /** Operations not started because maxInFlight were undecided. */
  heldBack = 0;
  /** Attempts waiting for an answer, by replica name. */
  readonly waitingOn = new Map<string, number>();
  /** When the newest attempt to each replica started. */
  readonly lastStartOn = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private turn = 0;

  constructor(private readonly options: TrafficOptions) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.inFlight.size >= this.options.maxInFlight) {
        this.heldBack++;
        return;
      }
      const key = `fault-${randomUUID()}`;
      const operation: Operation = { key, email: `${key}@example.org`, attempts: [] };
      this.operations.push(operation);
      const done = this.complete(operation).finally(() => this.inFlight.delete(done));
      this.inFlight.add(done);
    }, 1000 / this.options.rate);
  }

  /** No new operations; resolves once every started one is decided or given up. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all(this.inFlight);
  }

  get attempts(): Attempt[] {
    return this.operations.flatMap((operation) => operation.attempts);
  }

  private async complete(operation: Operation): Promise<void> {
    const body = JSON.stringify({ givenName: 'Fault', familyName: 'Injection', birthDate: '1984-02-29', email: operation.email });
    const giveUpAt = Date.now() + this.options.giveUpMs;
    for (;;) {
      const replica = this.options.replicas[this.turn++ % this.options.replicas.length]!;
      const { attempt, retryAfterMs, patientId } = await this.attempt(replica, operation, body);
      operation.attempts.push(attempt);
      if (attempt.outcome === 201) {
        operation.result = 'created';
        operation.patientId = patientId;
        return;
      }
      if (attempt.code === 'IDEMPOTENCY_KEY_EXECUTED') {
        operation.result = 'executed';
        return;
      }
      if (!attempt.retryable) {
        operation.result = 'failed';
        return;
      }
      const backoff = Math.max(retryAfterMs, Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (operation.attempts.length - 1)));
      const delay = backoff * (0.75 + Math.random() / 2);
      if (Date.now() + delay > giveUpAt) {
        operation.result = 'gave-up';
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  private async attempt(replica: Replica, operation: Operation, body: string): Promise<{ attempt: Attempt; retryAfterMs: number; patientId?: string }> {
    const start = Date.now();
    const first = operation.attempts.length === 0;
    const headers = { authorization: `Bearer ${this.options.credential}`, 'idempotency-key': operation.key, 'content-type': 'application/json' };
    this.waitingOn.set(replica.name, (this.waitingOn.get(replica.name) ?? 0) + 1);
    this.lastStartOn.set(replica.name, start);
    try {
      const res = await fetch(replica.url + PATIENTS, { method: 'POST', headers, body, signal: AbortSignal.timeout(this.options.attemptTimeoutMs) });
      const text = await res.text();
      const parsed = /json/.test(res.headers.get('content-type') ?? '') ? (JSON.parse(text) as { id?: string; code?: string; retryable?: boolean }) : {};
      const header = res.headers.get('retry-after');
      const retryAfter = Number(header ?? 0);
      return {
        attempt: { replica: replica.name, start, end: Date.now(), outcome: res.status, first, retryable: res.status >= 400 && parsed.retryable === true, ...(res.status >= 400 && { code: parsed.code }), ...(header !== null && { retryAfter: header }) },
        retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter * 1000, MAX_BACKOFF_MS) : 0,
        patientId: parsed.id,
      };
    } catch (error) {
      const timedOut = (error as Error).name === 'TimeoutError';
      return { attempt: { replica: replica.name, start, end: Date.now(), outcome: timedOut ? 'timeout' : 'connection', first, retryable: true }, retryAfterMs: 0 };
    } finally {
      this.waitingOn.set(replica.name, this.waitingOn.get(replica.name)! - 1);
    }
  }
}
