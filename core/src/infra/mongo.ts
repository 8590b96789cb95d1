// MongoDB connections with deadlines, working the same on MongoDB and the embedded FerretDB (no transactions,
// no change streams). The driver (v7) no longer has client-side operation timeouts (`timeoutMS` is parsed and
// ignored), so every step a call can wait on has a limit of its own: finding the server, taking a pooled
// connection, connecting, and each reply. Two clients share the database: the one requests use, with the
// request deadline, and one for the few legitimate long operations (index builds at start-up, the webhook
// dispatcher's scans and purges, the idempotency sweep, catalog snapshot loads and publishing, the gateway's
// per-connection index builds, clinical ingest's bulk writes), whose replies may take longer but not forever.
// A cursor's deadline applies to each batch, not to the whole read.
import {
  MongoBulkWriteError,
  MongoClient,
  MongoError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  type Collection,
  type Db,
  type Document,
  type MongoClientOptions,
} from 'mongodb';
import { answersWithin } from './deadline.js';

export interface MongoDeadlines {
  /** Each step of a call on the request path. */
  timeoutMs: number;
  /** Each reply of a long operation (finding the server and connecting keep the request deadline). */
  longTimeoutMs: number;
}

export const DEFAULT_MONGO_DEADLINES: Readonly<MongoDeadlines> = Object.freeze({
  timeoutMs: 2500,
  longTimeoutMs: 60_000,
});

export interface Mongo {
  client: MongoClient;
  /** Every call through this has the request deadline. */
  db: Db;
  /** The same database for long operations. */
  longDb: Db;
  /** Closes both clients. */
  close(): Promise<void>;
}

/** How long a request waits for a pooled connection: a fifth of its deadline, at least half a second. */
export const poolWaitMs = (timeoutMs: number) => Math.min(timeoutMs, Math.max(500, Math.round(timeoutMs / 5)));

/** The two clients' settings. */
export function mongoClientOptions({ timeoutMs, longTimeoutMs }: MongoDeadlines): {
  request: MongoClientOptions;
  long: MongoClientOptions;
} {
  const common: MongoClientOptions = {
    // A server that cannot be found or connected to within the request deadline is not there.
    serverSelectionTimeoutMS: timeoutMs,
    // Also bounds the handshake, which the driver reads with this as its socket timeout.
    connectTimeoutMS: timeoutMs,
  };
  return {
    request: {
      ...common,
      // A request waits for a pooled connection, then for the reply: the two waits add up. A pool that has no
      // connection free for a fifth of the deadline (its 50 all wait on a stalled server) is answered 503 at
      // once, rather than after a whole deadline of waiting before the reply's own.
      waitQueueTimeoutMS: poolWaitMs(timeoutMs),
      socketTimeoutMS: timeoutMs,
      // A read that timed out is not sent again: that would double the deadline. The caller sees 503 with
      // Retry-After and retries. (Writes keep the driver's retry where the server supports retryable writes,
      // for its exactly-once guarantee; standalone servers and FerretDB have none.)
      retryReads: false,
      maxPoolSize: 50,
      appName: 'portico',
    },
    long: {
      ...common,
      waitQueueTimeoutMS: longTimeoutMs,
      socketTimeoutMS: longTimeoutMs,
      maxPoolSize: 10,
      appName: 'portico-long',
    },
  };
}

export async function connectMongo(
  uri: string,
  database: string,
  deadlines: MongoDeadlines = DEFAULT_MONGO_DEADLINES,
  extra: MongoClientOptions = {},
): Promise<Mongo> {
  const options = mongoClientOptions(deadlines);
  const client = new MongoClient(uri, { ...options.request, ...extra });
  await client.connect();
  // Connects on its first operation.
  const longClient = new MongoClient(uri, { ...options.long, ...extra });
  return {
    client,
    db: client.db(database),
    longDb: longClient.db(database),
    async close() {
      await Promise.all([client.close(), longClient.close()]);
    },
  };
}

/**
 * Whether the database answers within `deadlineMs`. With `collection`, a read of one document by _id from it
 * as well: a server can answer `ping` while its storage no longer answers queries (the embedded database
 * with its SQLite pool held, docs/operations.md), and a readiness check must see that.
 */
export async function pingMongo(db: Db, deadlineMs = 1500, collection?: string): Promise<boolean> {
  return answersWithin(async () => {
    const signal = AbortSignal.timeout(deadlineMs);
    await db.command({ ping: 1 }, { signal });
    if (collection !== undefined)
      await db
        .collection<{ _id: string }>(collection)
        .findOne({ _id: 'readiness-probe' }, { projection: { _id: 1 }, signal });
    return true;
  }, deadlineMs);
}

// Server answers that mean "not now" rather than "wrong": a deadline, a shutdown, an election.
// HostUnreachable, HostNotFound, MaxTimeMSExpired, NetworkTimeout, ShutdownInProgress, PrimarySteppedDown,
// ExceededTimeLimit, SocketException, NotWritablePrimary, InterruptedAtShutdown,
// InterruptedDueToReplStateChange, NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary.
const UNAVAILABLE_CODES = new Set([6, 7, 50, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);
// Driver errors it does not export: no connection came free in time; the client was closed.
const UNAVAILABLE_NAMES = new Set(['MongoWaitQueueTimeoutError', 'MongoPoolClosedError']);

/** Socket errors of a connection the other end closed or reset. */
const SOCKET_CODES = new Set(['EPIPE', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT']);

/** MongoDB's duplicate key error (E11000): what a unique index answers, from the driver or a fake built like it. */
export function isDuplicateKey(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 11000;
}

/** Whether `error` says the database is unreachable, stalled or closed (a 503), not that a call was wrong. */
export function isMongoUnavailable(error: unknown): boolean {
  // The driver (7.x) lets the socket's own error through unwrapped when a write meets a connection the
  // server has just closed (it waits for 'drain' and rethrows what the socket emitted): seen when the
  // database is killed under load (test/faults). It is told by the driver's frames in its stack.
  if (
    error instanceof Error &&
    SOCKET_CODES.has((error as NodeJS.ErrnoException).code ?? '') &&
    /[\\/]node_modules[\\/]mongodb[\\/]/.test(error.stack ?? '')
  )
    return true;
  if (
    error instanceof MongoNetworkError || // timeouts of a reply included
    error instanceof MongoServerSelectionError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoOperationTimeoutError
  ) {
    return true;
  }
  // insertMany and bulkWrite wrap the driver's own error (a reply that timed out) as the bulk error's response.
  if (error instanceof MongoBulkWriteError && error.errorResponse instanceof Error && error.errorResponse !== error)
    return isMongoUnavailable(error.errorResponse);
  if (error instanceof MongoServerError && typeof error.code === 'number' && UNAVAILABLE_CODES.has(error.code))
    return true;
  return error instanceof MongoError && UNAVAILABLE_NAMES.has(error.name);
}

/**
 * `collection` reached through `db` (the long client's handle on its database, for an index build), or
 * `collection` itself when there is none.
 */
export function through<T extends Document>(collection: Collection<T>, db: Db | undefined): Collection<T> {
  return db ? db.collection<T>(collection.collectionName) : collection;
}

/**
 * The document with this `_id`, or null: what `findOne({ _id: id })` answers, sent as a bare `find` command. The
 * driver's findOne builds a cursor around the one reply (a cursor object, its session and its close); for a point
 * read on a hot path that bookkeeping costs about a fifth of the read's CPU.
 */
export async function findById<T extends Document>(db: Db, collection: string, id: string): Promise<T | null> {
  const reply = await db.command({ find: collection, filter: { _id: id }, limit: 1, singleBatch: true });
  return (reply as { cursor?: { firstBatch?: T[] } }).cursor?.firstBatch?.[0] ?? null;
}
