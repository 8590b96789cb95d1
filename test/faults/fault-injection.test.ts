// Fault injection with real processes on loopback: two API replicas (`node dist/api/src/main.js`), one Redis
// and one embedded database (FerretDB), all of this file's own. Under steady concurrent patient creations,
// each with an Idempotency-Key and retried with it by its client (test/support/write-traffic.ts), each
// scenario injects one fault: (a) SIGKILL a replica while a request is in its writes (restarted after 3 s),
// (b) SIGKILL Redis and start it again empty, (c) SIGSTOP Redis for 5 s, (d) SIGSTOP the database for 5 s,
// (e) SIGKILL the database and start it again on its files. After each:
//   - every attempt was answered within ANSWER_MS (a refused or cut connection only from a killed replica);
//   - nothing answered 5xx other than 503, every 503 and 409 IDEMPOTENCY_KEY_IN_USE carried Retry-After,
//     and every operation ended created (201) or, its response lost, 409 IDEMPOTENCY_KEY_EXECUTED;
//   - no key executed twice: exactly one patient per created or executed operation, none for the others
//     (counted in the database);
//   - every patient has its patient.created event, committed or committed by the outbox's recovery, and no
//     event was committed for a patient that does not exist;
//   - new operations succeed again within RECOVERY_MS of the dependency's return, and keep succeeding.
// The table printed at the end says what was injected and what came of it. PORTICO_FAULT_LOGS=1 prints the
// replicas' warnings and errors after every scenario (not only a failed one); PORTICO_FAULT_DUMP=<prefix>
// writes each scenario's attempts to <prefix>-<scenario>.json.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { MongoClient, type Db } from 'mongodb';
import type { Redis } from 'ioredis';
import { Outbox } from '../../api/src/events/outbox.js';
import { documentLocksFor } from '../../core/src/infra/locks.js';
import { connectRedis } from '../../core/src/infra/redis.js';
import { ADMIN_TOKEN } from '../support/api.js';
import { startPausableDatabase, startPausableRedis, type PausableServer } from '../support/pausable.js';
import { startReplica, whenReady, type Replica } from '../support/replicas.js';
import { WriteTraffic, type Attempt, type Operation } from '../support/write-traffic.js';

/**
 * The clients' deadline for an answer. The replicas run with the production deadline of 2.5 s per dependency
 * call; a stall is answered 503 within about that (the table reports the slowest 503; a bound that tight
 * would flake on a busy machine), but a request makes several calls, and while a database catches up after a
 * pause it answers each call in time and the request as a whole later.
 */
const ANSWER_MS = 10_000;
/** New operations must succeed again within this of the dependency's return. */
const RECOVERY_MS = 10_000;
/** Traffic before the fault, and after the dependency's return (longer than RECOVERY_MS, so recovery shows). */
const STEADY_MS = 3_000;
const AFTER_MS = 15_000;
/** After recovery, at least this many new operations must have succeeded. */
const SUCCEEDED_AFTER_RECOVERY = 20;
/** New operations per second, and how many may be undecided at once. */
const RATE = 20;
const MAX_IN_FLIGHT = 150;
/**
 * A client gives up on an operation after this: beyond the longest legitimate wait, a claim whose server
 * died (LEASE_MS, 30 s, in api/src/http/idempotency.ts) before recovery decides it.
 */
const GIVE_UP_MS = 60_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Row {
  scenario: string;
  injected: string;
  attempts: number;
  answered: number;
  operations: number;
  created: number;
  executed: number;
  errors: string;
  duplicates: number;
  missingEvents: number;
  maxLatencyMs: number;
  /** The slowest 503. */
  max503Ms: number;
  recoveryMs: number;
}

describe('faults: two API replicas under idempotent write traffic', function () {
  this.timeout(15 * 60_000);
  let database: PausableServer;
  let redis: PausableServer;
  const replicas: Replica[] = [];
  let credential: string;
  let tenantId: string;
  let client: MongoClient;
  let db: Db;
  let checkRedis: Redis;
  const rows: Row[] = [];
  const name = `faults_${randomUUID().replaceAll('-', '').slice(0, 12)}`;

  before(async () => {
    [database, redis] = await Promise.all([startPausableDatabase(), startPausableRedis()]);
    for (const replica of ['replica-1', 'replica-2']) replicas.push(await startReplica({ name: replica, mongodbServer: database.url, database: name, redisUrl: redis.url }));
    const admin = (path: string, body: unknown) =>
      fetch(`${replicas[0]!.url}/api/admin/v1${path}`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<Record<string, string>>);
    tenantId = (await admin('/customer-accounts', { name: 'Fault injection' })).id!;
    credential = (await admin(`/customer-accounts/${tenantId}/api-keys`, { scopes: ['patient:read', 'patient:write'] })).key!;
    client = await new MongoClient(database.url, { serverSelectionTimeoutMS: 30_000 }).connect();
    db = client.db(name);
  });

  after(async () => {
    if (rows.length > 0) printTable(rows);
    await client?.close();
    checkRedis?.disconnect();
    await Promise.all(replicas.map((replica) => replica.stop()));
    await Promise.all([database?.stop(), redis?.stop()]);
  });

  afterEach(async function () {
    if (this.currentTest?.state !== 'failed' && !process.env.PORTICO_FAULT_LOGS) return;
    for (const replica of replicas) if (replica.errors.length + replica.warnings.length > 0) console.log(`${replica.name} logged:\n${[...replica.warnings, ...replica.errors].join('\n')}`);
    for (const replica of replicas) replica.errors.length = replica.warnings.length = 0;
  });

  /** Runs traffic, injects the fault, runs on after the dependency's return, and waits for every operation. */
  async function underTraffic(fault: (traffic: WriteTraffic) => Promise<void>): Promise<{ operations: Operation[]; returnedAt: number }> {
    await Promise.all(replicas.map((replica) => whenReady(replica)));
    const traffic = new WriteTraffic({ replicas, credential, rate: RATE, maxInFlight: MAX_IN_FLIGHT, attemptTimeoutMs: ANSWER_MS, giveUpMs: GIVE_UP_MS });
    traffic.start();
    await sleep(STEADY_MS);
    await fault(traffic);
    const returnedAt = Date.now();
    await sleep(AFTER_MS);
    await traffic.stop();
    return { operations: traffic.operations, returnedAt };
  }

  /** The checks every scenario passes, after its row of the table. */
  async function verify(scenario: string, injected: string, run: { operations: Operation[]; returnedAt: number }, killedReplica?: string): Promise<void> {
    const { operations, returnedAt } = run;
    if (process.env.PORTICO_FAULT_DUMP) (await import('node:fs')).writeFileSync(`${process.env.PORTICO_FAULT_DUMP}-${scenario}.json`, JSON.stringify(run));
    const attempts = operations.flatMap((operation) => operation.attempts);

    // Exactly once per key, counted in the database.
    const emails = operations.map((operation) => operation.email);
    const patients = await db.collection<{ id: string; email: string }>('patients').find({ tenantId, email: { $in: emails } }, { projection: { id: 1, email: 1 } }).toArray();
    const byEmail = new Map<string, string[]>();
    for (const patient of patients) byEmail.set(patient.email, [...(byEmail.get(patient.email) ?? []), patient.id]);
    const duplicates = [...byEmail.values()].reduce((sum, ids) => sum + ids.length - 1, 0);

    // Every change has its event, none is invented: recovery (as the dispatcher runs it, a day on) commits
    // what a killed or failed request left staged.
    checkRedis ??= await connectRedis(redis.url, 2_500);
    const later = new Date(Date.now() + 24 * 60 * 60_000 - 60_000);
    await new Outbox(db, await documentLocksFor(db, checkRedis), { now: () => later }).recoverStaged(later, 100_000);
    const events = await db.collection<{ subject: string; status: string }>('outbox_events').find({ customerAccountId: tenantId, type: 'patient.created' }, { projection: { subject: 1, status: 1 } }).toArray();
    const committed = new Map<string, number>();
    for (const event of events) if (event.status !== 'staged') committed.set(event.subject, (committed.get(event.subject) ?? 0) + 1);
    const missingEvents = patients.filter((patient) => committed.get(`patient:${patient.id}`) !== 1).map((patient) => patient.id);
    const everyPatient = new Set((await db.collection<{ id: string }>('patients').find({ tenantId }, { projection: { id: 1 } }).toArray()).map((patient) => `patient:${patient.id}`));
    const invented = [...committed.keys()].filter((subject) => !everyPatient.has(subject));

    // Recovery: from the return until the end of the last failed new operation started after it; every new
    // operation started after that succeeded, and there must be enough of them to show it.
    const afterReturn = attempts.filter((attempt) => attempt.first && attempt.start >= returnedAt);
    const recoveredAt = Math.max(returnedAt, ...afterReturn.filter((attempt) => attempt.outcome !== 201).map((attempt) => attempt.end));
    const recoveryMs = recoveredAt - returnedAt;
    const succeededAfter = afterReturn.filter((attempt) => attempt.start >= recoveredAt && attempt.outcome === 201).length;
    const unavailable = attempts.filter((attempt) => attempt.outcome === 503);

    rows.push({
      scenario,
      injected,
      attempts: attempts.length,
      answered: attempts.filter((attempt) => typeof attempt.outcome === 'number').length,
      operations: operations.length,
      created: operations.filter((operation) => operation.result === 'created').length,
      executed: operations.filter((operation) => operation.result === 'executed').length,
      errors: errorSummary(attempts),
      duplicates,
      missingEvents: missingEvents.length,
      maxLatencyMs: Math.max(...attempts.map((attempt) => attempt.end - attempt.start)),
      max503Ms: Math.max(0, ...unavailable.map((attempt) => attempt.end - attempt.start)),
      recoveryMs,
    });

    // Answered, within the deadline, and never with a server error other than 503.
    const late = attempts.filter((attempt) => attempt.outcome === 'timeout' || attempt.end - attempt.start > ANSWER_MS);
    expect(late, 'attempts without an answer within the deadline').to.deep.equal([]);
    const cut = attempts.filter((attempt) => attempt.outcome === 'connection' && attempt.replica !== killedReplica);
    expect(cut, 'refused or cut connections from a replica that was not killed').to.deep.equal([]);
    const unexpected = attempts.filter((attempt) => typeof attempt.outcome === 'number' && !expectedAnswer(attempt));
    expect(unexpected, 'answers other than 201, 503, 409 IDEMPOTENCY_KEY_IN_USE/EXECUTED').to.deep.equal([]);
    const undecided = operations.filter((operation) => operation.result !== 'created' && operation.result !== 'executed');
    expect(undecided.map((operation) => ({ key: operation.key, result: operation.result, attempts: operation.attempts.map(describeAttempt) })), 'operations neither created nor executed').to.deep.equal([]);
    expect(duplicates, 'operations executed more than once').to.equal(0);
    const missing = operations.filter((operation) => byEmail.get(operation.email)?.length !== 1);
    expect(missing.map((operation) => operation.key), 'created or executed operations without their patient').to.deep.equal([]);
    const mismatched = operations.filter((operation) => operation.result === 'created' && byEmail.get(operation.email)?.[0] !== operation.patientId);
    expect(mismatched.map((operation) => operation.key), 'a 201 that names another patient than the one stored').to.deep.equal([]);
    expect(missingEvents, 'patients without exactly one committed patient.created event').to.deep.equal([]);
    expect(invented, 'events committed for patients that do not exist').to.deep.equal([]);
    const unpaced = attempts.filter((attempt) => (attempt.outcome === 503 || attempt.code === 'IDEMPOTENCY_KEY_IN_USE') && !/^[1-9]\d*$/.test(attempt.retryAfter ?? ''));
    expect(unpaced.map(describeAttempt), '503 and 409 IDEMPOTENCY_KEY_IN_USE without Retry-After').to.deep.equal([]);
    expect(recoveryMs, 'time from the return until new operations succeed').to.be.at.most(RECOVERY_MS);
    expect(succeededAfter, 'new operations that succeeded after recovery').to.be.at.least(SUCCEEDED_AFTER_RECOVERY);
  }

  it('(a) SIGKILL one replica: the other answers, the killed one’s operations end executed or created once', async () => {
    const killed = replicas[1]!;
    let killedAt = 0;
    const run = await underTraffic(async (traffic) => {
      // While a request that started a few milliseconds ago waits on it (past its claim, into its writes),
      // so that it is cut in the middle.
      const until = Date.now() + 5_000;
      const justStarted = () => {
        const age = Date.now() - (traffic.lastStartOn.get(killed.name) ?? 0);
        return (traffic.waitingOn.get(killed.name) ?? 0) > 0 && age >= 6 && age <= 10;
      };
      while (!justStarted() && Date.now() < until) await new Promise((resolve) => setImmediate(resolve));
      killedAt = Date.now();
      await killed.kill();
      await sleep(3_000);
      await killed.restart();
    });
    await verify('a', `SIGKILL ${killed.name}, restarted after 3 s`, run, killed.name);
    const cut = run.operations.flatMap((operation) => operation.attempts).filter((attempt) => attempt.replica === killed.name && attempt.outcome === 'connection' && attempt.start < killedAt);
    expect(cut.length, 'requests cut in the middle by the kill').to.be.greaterThan(0);
  });

  it('(b) SIGKILL Redis and start it again empty: idempotency records and the outbox live in the database', async () => {
    const run = await underTraffic(async () => {
      await redis.kill();
      await sleep(2_000);
      await redis.restart();
    });
    await verify('b', 'SIGKILL Redis, restarted empty after 2 s', run);
  });

  it('(c) SIGSTOP Redis for 5 s: 503 with Retry-After within the deadline, then recovery without a restart', async () => {
    const run = await underTraffic(async () => {
      redis.pause();
      await sleep(5_000);
      redis.resume();
    });
    await verify('c', 'SIGSTOP Redis for 5 s', run);
  });

  it('(d) SIGSTOP the database for 5 s: 503 within the deadline, and what it applies on resuming is recorded once', async () => {
    const run = await underTraffic(async () => {
      database.pause();
      await sleep(5_000);
      database.resume();
    });
    await verify('d', 'SIGSTOP the database for 5 s', run);
  });

  it('(e) SIGKILL the database and start it again on its files', async () => {
    const run = await underTraffic(async () => {
      await database.kill();
      await sleep(2_000);
      await database.restart();
    });
    await verify('e', 'SIGKILL the database, restarted after 2 s', run);
  });
});

function expectedAnswer(attempt: Attempt): boolean {
  if (attempt.outcome === 201 || attempt.outcome === 503) return true;
  return attempt.outcome === 409 && (attempt.code === 'IDEMPOTENCY_KEY_IN_USE' || attempt.code === 'IDEMPOTENCY_KEY_EXECUTED');
}

function describeAttempt(attempt: Attempt): string {
  return `${attempt.replica} ${attempt.outcome}${attempt.code ? ` ${attempt.code}` : ''} in ${attempt.end - attempt.start} ms`;
}

function errorSummary(attempts: Attempt[]): string {
  const counts = new Map<string, number>();
  for (const attempt of attempts) {
    if (attempt.outcome === 201) continue;
    const label = attempt.outcome === 409 ? `409 ${attempt.code === 'IDEMPOTENCY_KEY_IN_USE' ? 'in use' : 'executed'}` : String(attempt.outcome);
    counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  return [...counts].map(([label, count]) => `${label}: ${count}`).join(', ') || 'none';
}

function printTable(rows: Row[]): void {
  const header = ['', 'injected', 'attempts answered', 'operations', 'created', 'executed (response lost)', 'errors by status', 'duplicates', 'events missing', 'slowest answer', 'slowest 503', 'recovery'];
  const lines = rows.map((row) => [row.scenario, row.injected, `${row.answered}/${row.attempts}`, String(row.operations), String(row.created), String(row.executed), row.errors, String(row.duplicates), String(row.missingEvents), `${(row.maxLatencyMs / 1000).toFixed(2)} s`, `${(row.max503Ms / 1000).toFixed(2)} s`, `${(row.recoveryMs / 1000).toFixed(2)} s`]);
  const widths = header.map((title, column) => Math.max(title.length, ...lines.map((line) => line[column]!.length)));
  const format = (cells: string[]) => `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  console.log(['', 'Fault injection (two API replicas, Redis, the embedded database; loopback):', format(header), format(widths.map((width) => '-'.repeat(width))), ...lines.map(format), ''].join('\n'));
}
