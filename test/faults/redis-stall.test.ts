// A Redis stall under idempotent writes, with clients that do what Retry-After tells them (docs/api.md, "Rules every
// operation follows"): two API replicas (`node dist/api/src/main.js`), one Redis and one embedded database of this
// file's own. Each run starts patient creations, deletions with If-Match and webhook-endpoint patches with If-Match,
// every one with an Idempotency-Key, on both replicas, then stops Redis (SIGSTOP) while they are in flight and more
// start, and resumes it 4 s later. A client retries an operation with the same key when its answer's Retry-After
// says (a 503's, an IDEMPOTENCY_KEY_IN_USE's), and so on until it is answered for good. After each run:
//   - every operation ended with its own success or, its answer lost, 409 IDEMPOTENCY_KEY_EXECUTED;
//   - none was refused with IDEMPOTENCY_KEY_IN_USE once the Retry-After of a 503 it was given had passed and Redis
//     was answering again (the request that held the key is over by then: nothing is left running under it);
//   - each executed exactly once, counted in the database.
// PORTICO_REDIS_STALL_RUNS (3) runs in a row; PORTICO_FAULT_LOGS=1 prints every attempt of every run.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { MongoClient, type Db } from 'mongodb';
import { connectRedis } from '#core/infra/redis.js';
import { ADMIN_TOKEN } from '../../testkit/api.js';
import { WEBHOOKS } from '../../testkit/webhooks.js';
import { startPausableDatabase, startPausableRedis, type PausableServer } from '../../testkit/pausable.js';
import { startReplica, whenReady, type Replica } from '../../testkit/replicas.js';

const RUNS = Number(process.env.PORTICO_REDIS_STALL_RUNS ?? 3);
/** Operations a run: creations, deletions and patches in turn. */
const OPERATIONS = 36;
const STALL_MS = 4_000;
/** A client's wait for one answer (every request is answered within the replicas' 5 s deadline). */
const ANSWER_MS = 10_000;
/** A client gives up on an operation after this (far beyond any Retry-After). */
const GIVE_UP_MS = 60_000;
/** A client retries an IDEMPOTENCY_KEY_IN_USE this soon at the earliest, whatever its Retry-After (1 s). */
const POLL_MS = 200;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Attempt {
  replica: string;
  start: number;
  end: number;
  status: number | 'timeout' | 'connection';
  code?: string;
  retryAfter?: string;
}

interface Operation {
  kind: 'create' | 'delete' | 'patch';
  key: string;
  method: string;
  path: string;
  body?: unknown;
  ifMatch?: string;
  expected: number;
  /** The patient a creation makes, found by its e-mail. */
  email?: string;
  attempts: Attempt[];
  /** When the first 503's Retry-After passed: from then on, Redis answering, IDEMPOTENCY_KEY_IN_USE is a refusal. */
  dueAt?: number;
  result?: 'done' | 'executed' | 'gave up';
}

describe('faults: a Redis stall under idempotent writes, retried as Retry-After says', function () {
  this.timeout(20 * 60_000);
  let database: PausableServer;
  let redis: PausableServer;
  const replicas: Replica[] = [];
  let credential: string;
  let tenantId: string;
  let client: MongoClient;
  let db: Db;
  const name = `stall_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const call = async (url: string, method: string, path: string, key: string, body?: unknown) => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, string> };
  };

  before(async () => {
    [database, redis] = await Promise.all([startPausableDatabase(), startPausableRedis()]);
    const env = { PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: 'true' };
    for (const replica of ['replica-1', 'replica-2'])
      replicas.push(
        await startReplica({ name: replica, mongodbServer: database.url, database: name, redisUrl: redis.url, env }),
      );
    client = await new MongoClient(database.url, { serverSelectionTimeoutMS: 30_000 }).connect();
    db = client.db(name);
  });

  after(async () => {
    await client?.close();
    await Promise.all(replicas.map((replica) => replica.stop()));
    await Promise.all([database?.stop(), redis?.stop()]);
  });

  /**
   * The operations of one run, on resources made for it (patients to delete, endpoints to patch), in an account of its
   * own (an account holds at most 100 webhook endpoints).
   */
  async function operationsOfRun(run: number): Promise<Operation[]> {
    const url = replicas[0]!.url;
    const account = await call(url, 'POST', '/api/admin/v1/customer-accounts', ADMIN_TOKEN, { name: `Stall ${run}` });
    tenantId = account.body.id!;
    credential = (
      await call(url, 'POST', `/api/admin/v1/customer-accounts/${tenantId}/api-keys`, ADMIN_TOKEN, {
        scopes: ['patient:read', 'patient:write', 'webhook:read', 'webhook:write'],
      })
    ).body.key!;
    const operations: Operation[] = [];
    for (let i = 0; i < OPERATIONS; i++) {
      const key = `stall-${run}-${i}-${randomUUID().slice(0, 8)}`;
      if (i % 3 === 0) {
        const email = `${key}@example.org`;
        const body = { givenName: 'Stall', familyName: `Run ${run}`, email };
        operations.push({
          kind: 'create',
          key,
          method: 'POST',
          path: '/api/platform/v1/patients',
          body,
          expected: 201,
          email,
          attempts: [],
        });
      } else if (i % 3 === 1) {
        const patient = await call(url, 'POST', '/api/platform/v1/patients', credential, {
          givenName: 'Doomed',
          familyName: `Run ${run}`,
        });
        expect(patient.status, JSON.stringify(patient.body)).to.equal(201);
        const path = `/api/platform/v1/patients/${patient.body.id}`;
        operations.push({ kind: 'delete', key, method: 'DELETE', path, ifMatch: '"1"', expected: 204, attempts: [] });
      } else {
        const endpoint = await call(url, 'POST', WEBHOOKS, credential, {
          url: `http://127.0.0.1:65000/stall-${key}`,
          eventTypes: ['app_user.tombstoned'],
        });
        expect(endpoint.status, JSON.stringify(endpoint.body)).to.equal(201);
        const path = `${WEBHOOKS}/${endpoint.body.id}`;
        const body = { description: key };
        operations.push({
          kind: 'patch',
          key,
          method: 'PATCH',
          path,
          body,
          ifMatch: '"1"',
          expected: 200,
          attempts: [],
        });
      }
    }
    return operations;
  }

  async function attempt(operation: Operation, replica: Replica): Promise<Attempt> {
    const start = Date.now();
    try {
      const res = await fetch(replica.url + operation.path, {
        method: operation.method,
        headers: {
          authorization: `Bearer ${credential}`,
          'idempotency-key': operation.key,
          ...(operation.body !== undefined && { 'content-type': 'application/json' }),
          ...(operation.ifMatch && { 'if-match': operation.ifMatch }),
        },
        body: operation.body === undefined ? undefined : JSON.stringify(operation.body),
        signal: AbortSignal.timeout(ANSWER_MS),
      });
      const text = await res.text();
      const code = (() => {
        try {
          return (JSON.parse(text) as { code?: string }).code;
        } catch {
          return undefined;
        }
      })();
      const retryAfter = res.headers.get('retry-after');
      return {
        replica: replica.name,
        start,
        end: Date.now(),
        status: res.status,
        ...(code && { code }),
        ...(retryAfter !== null && { retryAfter }),
      };
    } catch (error) {
      const status = (error as Error).name === 'TimeoutError' ? 'timeout' : 'connection';
      return { replica: replica.name, start, end: Date.now(), status };
    }
  }

  /** One client: the operation until it is answered for good, each retry when Retry-After says. */
  async function drive(operation: Operation, first: number): Promise<void> {
    const giveUpAt = Date.now() + GIVE_UP_MS;
    for (let n = first; Date.now() < giveUpAt; n++) {
      const answer = await attempt(operation, replicas[n % replicas.length]!);
      operation.attempts.push(answer);
      if (answer.status === operation.expected) return void (operation.result = 'done');
      if (answer.code === 'IDEMPOTENCY_KEY_EXECUTED') return void (operation.result = 'executed');
      const retryable =
        answer.status === 503 || answer.code === 'IDEMPOTENCY_KEY_IN_USE' || typeof answer.status !== 'number';
      if (!retryable) return;
      const wait = Math.max(POLL_MS, Number(answer.retryAfter ?? 0) * 1000);
      if (answer.status === 503) operation.dueAt ??= answer.end + wait;
      await sleep(answer.status === 503 ? wait : POLL_MS);
    }
    operation.result = 'gave up';
  }

  for (let run = 1; run <= RUNS; run++) {
    it(`run ${run} of ${RUNS}: every key executed once or replayed, none refused after its Retry-After`, async () => {
      await Promise.all(replicas.map((replica) => whenReady(replica)));
      const operations = await operationsOfRun(run);
      const clients: Promise<void>[] = [];
      // A third start before the stall (in flight when it comes), the rest during it, a few every 100 ms.
      const before = OPERATIONS / 3;
      for (let i = 0; i < before; i++) clients.push(drive(operations[i]!, i));
      await sleep(50);
      redis.pause();
      const stalledAt = Date.now();
      for (let i = before; i < OPERATIONS; i++) {
        clients.push(drive(operations[i]!, i));
        if (i % 3 === 2) await sleep(100);
      }
      await sleep(Math.max(0, STALL_MS - (Date.now() - stalledAt)));
      redis.resume();
      const resumed = Date.now();
      if (process.env.PORTICO_FAULT_LOGS) {
        // The document locks Redis holds just after it resumed, and for how much longer.
        const diagnose = await connectRedis(redis.url, 2_500);
        await sleep(100);
        for (const name of await diagnose.keys('portico:lock:*'))
          console.log(`+${Date.now() - resumed} ms: ${name} held for ${await diagnose.pttl(name)} ms more`);
        diagnose.disconnect();
      }
      await Promise.all(clients);
      if (process.env.PORTICO_FAULT_LOGS)
        for (const replica of replicas) {
          console.log(`${replica.name} logged:\n${[...replica.warnings, ...replica.errors].join('\n')}`);
          replica.warnings.length = replica.errors.length = 0;
        }

      if (process.env.PORTICO_FAULT_LOGS)
        for (const operation of operations)
          console.log(
            `${operation.kind} ${operation.key} due ${operation.dueAt ? Math.max(operation.dueAt, resumed) - resumed : '-'}: ${operation.attempts
              .map(
                (a) =>
                  `${a.replica} +${a.start - resumed}..+${a.end - resumed} ${a.status}${a.code ? ` ${a.code}` : ''}`,
              )
              .join(' | ')}`,
          );

      // Answered for good, and never held past the Retry-After of a 503 once Redis was back.
      const undecided = operations.filter(
        (operation) => operation.result !== 'done' && operation.result !== 'executed',
      );
      expect(
        undecided.map((o) => `${o.kind} ${o.key}: ${o.result} ${JSON.stringify(o.attempts.at(-1))}`),
        'operations neither done nor executed',
      ).to.deep.equal([]);
      // Due once its first 503's Retry-After has passed and Redis answers again.
      const dueOf = (o: Operation) => (o.dueAt === undefined ? Infinity : Math.max(o.dueAt, resumed));
      const held = operations.flatMap((operation) =>
        operation.attempts
          .filter((a) => a.start >= dueOf(operation) && a.code === 'IDEMPOTENCY_KEY_IN_USE')
          .map(
            (a) =>
              `${operation.kind} ${operation.key}: IN_USE at +${a.start - resumed} ms after Redis resumed (due +${dueOf(operation) - resumed})`,
          ),
      );
      expect(held, 'IDEMPOTENCY_KEY_IN_USE after the Retry-After of a 503, Redis answering').to.deep.equal([]);
      const others = operations.flatMap((operation) =>
        operation.attempts
          .filter(
            (a) =>
              a.status !== operation.expected &&
              a.status !== 503 &&
              a.code !== 'IDEMPOTENCY_KEY_IN_USE' &&
              a.code !== 'IDEMPOTENCY_KEY_EXECUTED',
          )
          .map((a) => `${operation.kind} ${operation.key}: ${JSON.stringify(a)}`),
      );
      expect(others, 'answers other than the success, 503, IN_USE or EXECUTED').to.deep.equal([]);
      expect(
        operations.filter((o) => o.attempts.some((a) => a.status === 503)).length,
        'the stall reached some operations (503)',
      ).to.be.greaterThan(0);

      // Exactly once, in the database.
      const creates = operations.filter((o) => o.kind === 'create');
      for (const operation of creates) {
        const count = await db.collection('patients').countDocuments({ tenantId, email: operation.email! });
        expect(count, `patients made by ${operation.key}`).to.equal(1);
      }
      for (const operation of operations.filter((o) => o.kind === 'delete')) {
        const id = operation.path.split('/').at(-1)!;
        const patient = await db.collection<{ _version: number; deletedAt: Date | null }>('patients').findOne({ id });
        expect([patient?._version, patient?.deletedAt !== null], `patient deleted by ${operation.key}`).to.deep.equal([
          2,
          true,
        ]);
      }
      for (const operation of operations.filter((o) => o.kind === 'patch')) {
        const id = operation.path.split('/').at(-1)!;
        const endpoint = await db
          .collection<{ _version: number; description?: string }>('webhook_endpoints')
          .findOne({ id });
        expect([endpoint?._version, endpoint?.description], `endpoint patched by ${operation.key}`).to.deep.equal([
          2,
          operation.key,
        ]);
      }
    });
  }
});
