// Steady concurrent writes with idempotency keys, as careful clients behind a load balancer send them. New
// operations start at a steady rate whatever became of the earlier ones (open loop, up to a bound in flight),
// each under a key of its own, and are of four kinds:
//   - create: POST /patients;
//   - delete: DELETE /patients/{id} with If-Match "1", of a patient an earlier create made;
//   - patch: PATCH /webhook-endpoints/{id} with If-Match of the version the client last saw, setting a
//     description of its own, on an endpoint no other operation is changing meanwhile;
//   - ingest: POST /connections/{id}/observations of one bundle of the same observations every time (a
//     re-ingest of ids that exist), each operation's bundle with a note of its own on every observation, to a
//     connection no other operation is writing to meanwhile (as one sync job per connection would).
// An attempt goes to the replicas in turn, and a retryable answer (503, 409 IDEMPOTENCY_KEY_IN_USE, 429, a
// refused or cut connection) is retried with the same key, body and If-Match on the next replica, after an
// exponential backoff with jitter (250 ms doubling up to 4 s, never sooner than Retry-After), until the
// operation is decided or the client gives up. Every attempt is recorded with its timing, so a fault test can
// say what was answered, how, how fast, and when the service recovered.
import { randomUUID } from 'node:crypto';
import type { Replica } from './replicas.js';

export type AttemptOutcome = number | 'connection' | 'timeout';

export interface Attempt {
  replica: string;
  /** Milliseconds since the epoch. */
  start: number;
  end: number;
  outcome: AttemptOutcome;
  /** The problem's code and detail, for an error status. */
  code?: string;
  detail?: string;
  retryable: boolean;
  /** The first attempt of its key (a new operation, not a retry). */
  first: boolean;
  /** Its Retry-After header, if any. */
  retryAfter?: string;
}

/** created: the operation's own success (201, 204, 200); executed: 409 IDEMPOTENCY_KEY_EXECUTED. */
export type KeyResult = 'created' | 'executed' | 'failed' | 'gave-up';

export type OperationKind = 'create' | 'delete' | 'patch' | 'ingest';

export interface Operation {
  kind: OperationKind;
  key: string;
  method: 'POST' | 'DELETE' | 'PATCH';
  path: string;
  /** The status of a success. */
  expected: number;
  body?: string;
  ifMatch?: string;
  /** create: unique per operation, how the test finds what it created. */
  email?: string;
  /** create: the id a 201 named; delete: the patient deleted. */
  patientId?: string;
  /** patch: the endpoint, and the description it sets. */
  endpointId?: string;
  description?: string;
  /** ingest: the connection written to (the note on its observations is the operation's key). */
  connectionId?: string;
  attempts: Attempt[];
  result?: KeyResult;
}

/** A webhook endpoint the traffic patches, and the version its client last saw (undefined: unknown, not used). */
export interface PatchableEndpoint {
  id: string;
  version: string | undefined;
}

export interface TrafficOptions {
  replicas: readonly Replica[];
  /** A secret key with patient:write and webhook:write. */
  credential: string;
  /** New operations per second. */
  rate: number;
  /** No new operation starts while this many are still undecided. */
  maxInFlight: number;
  /** An attempt unanswered after this long is recorded as 'timeout' (and fails the fault test). */
  attemptTimeoutMs: number;
  /** A client stops retrying an operation after this long. */
  giveUpMs: number;
  /** The endpoints patch operations may change (each by one operation at a time). None: no patches. */
  endpoints?: PatchableEndpoint[];
  /** The connections ingest operations write to, and the observations each bundle holds. None: no ingests. */
  ingest?: { connectionIds: string[]; resources: Record<string, unknown>[] };
  /** Shares of new operations that are deletes, patches and ingests (the rest are creates); default 0.2, 0.2, 0.1. */
  mix?: { delete: number; patch: number; ingest?: number };
}

const PATIENTS = '/api/platform/v1/patients';
const ENDPOINTS = '/api/platform/v1/webhook-endpoints';
const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 4_000;
const SUCCESS: Record<OperationKind, number> = { create: 201, delete: 204, patch: 200, ingest: 200 };

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
  /** Patients created by this traffic and not yet chosen for a delete. */
  private readonly deletable: string[] = [];
  /** Endpoints no operation is changing now. */
  private readonly idle: PatchableEndpoint[];
  /** Connections no ingest is writing to now. */
  private readonly idleConnections: string[];

  constructor(private readonly options: TrafficOptions) {
    this.idle = [...(options.endpoints ?? [])].filter((endpoint) => endpoint.version !== undefined);
    this.idleConnections = [...(options.ingest?.connectionIds ?? [])];
  }

  start(): void {
    this.timer = setInterval(() => {
      if (this.inFlight.size >= this.options.maxInFlight) {
        this.heldBack++;
        return;
      }
      const operation = this.next();
      this.operations.push(operation);
      const done = this.complete(operation).finally(() => this.inFlight.delete(done));
      this.inFlight.add(done);
    }, 1000 / this.options.rate);
  }

  /**
   * Runs `clients` clients, each starting its next operation as soon as the last is decided, for `ms`: the
   * operations done a second (each kind's own success), which is the service's capacity for this mix.
   */
  async closedLoop(clients: number, ms: number): Promise<number> {
    const until = Date.now() + ms;
    let done = 0;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (Date.now() < until) {
          const operation = this.next();
          this.operations.push(operation);
          await this.complete(operation);
          if (operation.result === 'created') done++;
        }
      }),
    );
    return done / (ms / 1000);
  }

  /** No new operations; resolves once every started one is decided or given up. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all(this.inFlight);
  }

  get attempts(): Attempt[] {
    return this.operations.flatMap((operation) => operation.attempts);
  }

  /** The next operation: a delete, a patch or an ingest in their shares when one can be made, else a create. */
  private next(): Operation {
    const key = `fault-${randomUUID()}`;
    const { delete: deletes, patch: patches, ingest: ingests = 0.1 } = this.options.mix ?? { delete: 0.2, patch: 0.2 };
    const draw = Math.random();
    const ingest = this.options.ingest;
    if (ingest && draw >= 1 - ingests && this.idleConnections.length > 0) {
      const connectionId = this.idleConnections.splice(Math.floor(Math.random() * this.idleConnections.length), 1)[0]!;
      const entry = ingest.resources.map((resource) => ({ resource: { ...resource, note: [{ text: key }] } }));
      const body = JSON.stringify({ resourceType: 'Bundle', type: 'collection', entry });
      return {
        kind: 'ingest',
        key,
        method: 'POST',
        path: `/api/platform/v1/connections/${connectionId}/observations`,
        expected: SUCCESS.ingest,
        body,
        connectionId,
        attempts: [],
      };
    }
    if (draw < deletes && this.deletable.length > 0) {
      const patientId = this.deletable.splice(Math.floor(Math.random() * this.deletable.length), 1)[0]!;
      return {
        kind: 'delete',
        key,
        method: 'DELETE',
        path: `${PATIENTS}/${patientId}`,
        expected: SUCCESS.delete,
        ifMatch: '"1"',
        patientId,
        attempts: [],
      };
    }
    if (draw < deletes + patches && this.idle.length > 0) {
      const endpoint = this.idle.splice(Math.floor(Math.random() * this.idle.length), 1)[0]!;
      const description = `fault ${key}`;
      return {
        kind: 'patch',
        key,
        method: 'PATCH',
        path: `${ENDPOINTS}/${endpoint.id}`,
        expected: SUCCESS.patch,
        body: JSON.stringify({ description }),
        ifMatch: `"${endpoint.version}"`,
        endpointId: endpoint.id,
        description,
        attempts: [],
      };
    }
    const email = `${key}@example.org`;
    return {
      kind: 'create',
      key,
      method: 'POST',
      path: PATIENTS,
      expected: SUCCESS.create,
      body: JSON.stringify({ givenName: 'Fault', familyName: 'Injection', birthDate: '1984-02-29', email }),
      email,
      attempts: [],
    };
  }

  private async complete(operation: Operation): Promise<void> {
    try {
      await this.decide(operation);
    } finally {
      // However it ended, the connection's writer is done with it (one that gave up may still be at work in
      // the service: the connection's lease keeps the next bundle waiting for it there).
      if (operation.connectionId !== undefined) this.idleConnections.push(operation.connectionId);
    }
  }

  private async decide(operation: Operation): Promise<void> {
    const giveUpAt = Date.now() + this.options.giveUpMs;
    for (;;) {
      const replica = this.options.replicas[this.turn++ % this.options.replicas.length]!;
      const { attempt, retryAfterMs, answer } = await this.attempt(replica, operation);
      operation.attempts.push(attempt);
      if (attempt.outcome === operation.expected) {
        operation.result = 'created';
        this.succeeded(operation, answer);
        return;
      }
      if (attempt.code === 'IDEMPOTENCY_KEY_EXECUTED') {
        operation.result = 'executed';
        // A patch's new version is not known: its endpoint is not patched again (the test reads it afterwards).
        return;
      }
      if (!attempt.retryable) {
        operation.result = 'failed';
        return;
      }
      const backoff = Math.max(
        retryAfterMs,
        Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (operation.attempts.length - 1)),
      );
      const delay = backoff * (0.75 + Math.random() / 2);
      if (Date.now() + delay > giveUpAt) {
        operation.result = 'gave-up';
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /** What a success makes possible: a created patient can be deleted, a patched endpoint patched again. */
  private succeeded(operation: Operation, answer: { id?: string; _version?: string }): void {
    if (operation.kind === 'create') {
      operation.patientId = answer.id;
      if (answer.id) this.deletable.push(answer.id);
    } else if (operation.kind === 'patch' && answer._version !== undefined) {
      this.idle.push({ id: operation.endpointId!, version: answer._version });
    }
  }

  private async attempt(
    replica: Replica,
    operation: Operation,
  ): Promise<{ attempt: Attempt; retryAfterMs: number; answer: { id?: string; _version?: string } }> {
    const start = Date.now();
    const first = operation.attempts.length === 0;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.credential}`,
      'idempotency-key': operation.key,
    };
    if (operation.body !== undefined) headers['content-type'] = 'application/json';
    if (operation.ifMatch !== undefined) headers['if-match'] = operation.ifMatch;
    this.waitingOn.set(replica.name, (this.waitingOn.get(replica.name) ?? 0) + 1);
    this.lastStartOn.set(replica.name, start);
    try {
      const res = await fetch(replica.url + operation.path, {
        method: operation.method,
        headers,
        body: operation.body,
        signal: AbortSignal.timeout(this.options.attemptTimeoutMs),
      });
      const text = await res.text();
      const parsed =
        /json/.test(res.headers.get('content-type') ?? '') && text !== ''
          ? (JSON.parse(text) as {
              id?: string;
              _version?: string;
              code?: string;
              detail?: string;
              retryable?: boolean;
            })
          : {};
      const header = res.headers.get('retry-after');
      const retryAfter = Number(header ?? 0);
      return {
        attempt: {
          replica: replica.name,
          start,
          end: Date.now(),
          outcome: res.status,
          first,
          retryable: res.status >= 400 && parsed.retryable === true,
          ...(res.status >= 400 && { code: parsed.code, detail: parsed.detail }),
          ...(header !== null && { retryAfter: header }),
        },
        retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter * 1000, MAX_BACKOFF_MS) : 0,
        answer: parsed,
      };
    } catch (error) {
      const timedOut = (error as Error).name === 'TimeoutError';
      return {
        attempt: {
          replica: replica.name,
          start,
          end: Date.now(),
          outcome: timedOut ? 'timeout' : 'connection',
          first,
          retryable: true,
        },
        retryAfterMs: 0,
        answer: {},
      };
    } finally {
      this.waitingOn.set(replica.name, this.waitingOn.get(replica.name)! - 1);
    }
  }
}
