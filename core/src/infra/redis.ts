// Redis clients with deadlines. The shared client fails fast: a command has `timeoutMs` to be answered, a
// command sent while disconnected fails at once, and a connection that stops answering is dropped and
// reopened, so that while Redis is stalled the next commands fail at once instead of each waiting out its
// deadline. Pub/sub clients are the other kind: they wait for Redis rather than fail.
import { Redis } from 'ioredis';
import { answersWithin } from './deadline.js';

export const DEFAULT_REDIS_TIMEOUT_MS = 2500;

/** A Redis client that fails fast instead of queueing or waiting while the server is away or stalled. */
export async function connectRedis(url: string, timeoutMs = DEFAULT_REDIS_TIMEOUT_MS): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    // No data within the deadline while commands wait: the connection is dropped and reopened. Until the new
    // one is ready, commands fail at once (no offline queue).
    socketTimeout: timeoutMs,
    enableOfflineQueue: false,
    // Commands in flight when a connection drops fail at once, and are never sent again after reconnection: a
    // command reported as failed (a lock, an idempotency claim) must not take effect later on its own.
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  redis.on('error', () => {}); // surfaced per command as 503; reconnection is automatic
  await redis.connect();
  return redis;
}

/**
 * A client of its own for pub/sub, from the shared one's address: it connects now, queues what it sends
 * until the server answers and sends it again after a reconnection (an invalidation made during a blip still
 * goes out), and subscriptions are renewed on every reconnection. No command deadline: it only listens and
 * publishes in the background, and a request never waits for it.
 */
export function pubSubClient(redis: Redis): Redis {
  const client = redis.duplicate({
    lazyConnect: false,
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
    autoResendUnfulfilledCommands: true,
    commandTimeout: undefined,
    socketTimeout: undefined,
  });
  client.on('error', () => {});
  return client;
}

/** Whether Redis answers a PING within `deadlineMs`. */
export async function pingRedis(redis: Redis, deadlineMs = 1500): Promise<boolean> {
  return answersWithin(async () => (await redis.ping()) === 'PONG', deadlineMs);
}

// What ioredis rejects a command with when the server is away, stalled or closed: plain Errors, told apart
// by message (ioredis exports no classes for them).
const UNAVAILABLE_MESSAGES = [
  'Command timed out',
  "Stream isn't writeable",
  'Connection is closed.',
  'Socket timeout',
  'Reached the max retries per request limit',
];
// Server replies that mean "not now": loading its data, busy with a script, a replica without its master,
// a failover in progress.
const UNAVAILABLE_REPLIES = /^(LOADING|BUSY|MASTERDOWN|TRYAGAIN|CLUSTERDOWN|READONLY|NOREPLICAS) /;

/** Whether `error` (from an ioredis command) says Redis is unreachable, stalled or closed: a 503. */
export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError') return true;
  if (error.name === 'ReplyError') return UNAVAILABLE_REPLIES.test(error.message);
  return UNAVAILABLE_MESSAGES.some((prefix) => error.message.startsWith(prefix));
}
