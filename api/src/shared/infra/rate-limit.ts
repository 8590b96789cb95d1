// Token buckets for rate limits such as initiate's (docs/api.md, "Connecting a patient's health system"): a bucket
// per partition holds `capacity` tokens and refills continuously at `capacity` per window; a request takes one token
// or is refused. With Redis every replica shares one bucket through one atomic script timed by the Redis server's
// clock, so replicas with skewed clocks agree; without Redis the buckets live in this process, timed by the injected
// clock. Both run the same arithmetic: takeToken below and TAKE in Lua mirror each other line for line.
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Clock } from '#core/clock.js';
import { parseDuration } from '#core/duration.js';
import { AppError, serviceUnavailable } from '../http/errors.js';

export interface RatePolicy {
  /** Tokens a full bucket holds: the burst a partition may spend at once. */
  capacity: number;
  /** The time an empty bucket takes to fill again; whole seconds, because RateLimit-Policy's `w` is. */
  windowMs: number;
  /** The policy's name in the RateLimit and RateLimit-Policy fields, e.g. "initiate". */
  name: string;
}

export interface RateDecision {
  allowed: boolean;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Until the bucket is full again. */
  resetMs: number;
  /** 0 when allowed; else until one token is back. */
  retryAfterMs: number;
}

export interface RateLimiter {
  /** Takes a token from `key`'s bucket when it has one. */
  take(key: string): Promise<RateDecision>;
  /** The bucket as it stands, taking nothing: `allowed` says whether a take now would be. */
  peek(key: string): Promise<RateDecision>;
}

const MAX_CAPACITY = 10_000;
const MIN_WINDOW_MS = 1_000;
const MAX_WINDOW_MS = 86_400_000;

/** "10/60s", "5/1m", "100/1h": `capacity`/`window`; undefined when malformed or out of range. */
export function parseRatePolicy(text: string, name: string): RatePolicy | undefined {
  const match = /^([0-9]{1,5})\/([0-9a-z]+)$/.exec(text.trim());
  if (!match) return undefined;
  const capacity = Number(match[1]);
  const windowMs = parseDuration(match[2]!);
  if (capacity < 1 || capacity > MAX_CAPACITY) return undefined;
  if (windowMs === undefined || windowMs < MIN_WINDOW_MS || windowMs > MAX_WINDOW_MS || windowMs % 1000 !== 0)
    return undefined;
  return Object.freeze({ capacity, windowMs, name });
}

/**
 * The fields of draft-ietf-httpapi-ratelimit-headers-10: `RateLimit-Policy` (quota `q` per window `w`
 * seconds) and `RateLimit` (remaining `r`, and `t`: seconds until more quota is made available, which for a
 * token bucket is the next token, not the whole window), plus `Retry-After` on a refusal, equal to `t`.
 */
export function rateLimitHeaders(policy: RatePolicy, decision: RateDecision): Record<string, string> {
  return rateLimitFields([{ policy, decision }]);
}

/**
 * The same fields for several policies a request is counted against: each field a list with one member per
 * policy, and Retry-After the longest wait of those that refused.
 */
export function rateLimitFields(limits: { policy: RatePolicy; decision: RateDecision }[]): Record<string, string> {
  const fields = limits.map(({ policy, decision }) => singlePolicyFields(policy, decision));
  const headers: Record<string, string> = {
    'RateLimit-Policy': fields.map((f) => f['RateLimit-Policy']).join(', '),
    RateLimit: fields.map((f) => f['RateLimit']).join(', '),
  };
  const waits = fields.flatMap((f) => (f['Retry-After'] === undefined ? [] : [Number(f['Retry-After'])]));
  if (waits.length > 0) headers['Retry-After'] = String(Math.max(...waits));
  return headers;
}

function singlePolicyFields(policy: RatePolicy, decision: RateDecision): Record<string, string> {
  const name = sfString(policy.name);
  const headers: Record<string, string> = {
    'RateLimit-Policy': `${name};q=${policy.capacity};w=${Math.max(1, Math.ceil(policy.windowMs / 1000))}`,
  };
  if (!decision.allowed) {
    const retryAfter = String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000)));
    headers['RateLimit'] = `${name};r=${decision.remaining};t=${retryAfter}`;
    headers['Retry-After'] = retryAfter;
    return headers;
  }
  const nextToken = msUntilNextToken(policy, decision);
  headers['RateLimit'] =
    nextToken === undefined
      ? `${name};r=${decision.remaining}`
      : `${name};r=${decision.remaining};t=${Math.ceil(nextToken / 1000)}`;
  return headers;
}

/** 429 with Retry-After and the RateLimit fields; never stored by idempotency (the bucket refills). */
export function rateLimited(detail: string, policy: RatePolicy, decision: RateDecision): AppError {
  return new AppError(
    'RATE_LIMITED',
    detail,
    { retryAfterSeconds: Math.max(1, Math.ceil(decision.retryAfterMs / 1000)) },
    rateLimitHeaders(policy, decision),
    { storable: false },
  );
}

/**
 * The bucket refills linearly and is full after `resetMs`, so the token after `remaining` arrives when the
 * tokens still missing beyond it have yet to come: resetMs less their refill time. None comes to a full bucket.
 */
function msUntilNextToken(policy: RatePolicy, decision: RateDecision): number | undefined {
  if (decision.remaining >= policy.capacity) return undefined;
  const later = (policy.capacity - decision.remaining - 1) * (policy.windowMs / policy.capacity);
  return Math.max(0, Math.round(decision.resetMs - later));
}

/** An RFC 9651 sf-string. */
function sfString(value: string): string {
  if (!/^[\x20-\x7e]*$/.test(value)) throw new Error(`rate policy name "${value}" is not printable ASCII`);
  return `"${value.replace(/[\\"]/g, '\\$&')}"`;
}

/** Partition keys carry user-chosen ids (appUserId up to 128 characters): a bucket is named by a digest. */
function bucketId(key: string): string {
  return createHash('sha256').update(key).digest('base64url');
}

/** A bucket's tokens as of `at` (ms). No bucket means a full one. */
interface Bucket {
  tokens: number;
  at: number;
}

// Refill is fractional: tolerate the last bits of floating-point error when asking for a whole token.
const EPSILON = 1e-9;

/** One request at `now`: refill since the bucket's time (never backwards), then take a token if one is there (`take`
 * false: only look). */
function takeToken(
  policy: RatePolicy,
  bucket: Bucket | undefined,
  now: number,
  take = true,
): { bucket: Bucket; decision: RateDecision } {
  let tokens = policy.capacity;
  let at = now;
  if (bucket) {
    at = Math.max(bucket.at, now);
    tokens = Math.min(policy.capacity, bucket.tokens + ((at - bucket.at) * policy.capacity) / policy.windowMs);
  }
  const allowed = tokens >= 1 - EPSILON;
  if (allowed && take) tokens = Math.max(0, tokens - 1);
  const perToken = policy.windowMs / policy.capacity;
  const lag = at - now;
  return {
    bucket: { tokens, at },
    decision: {
      allowed,
      remaining: Math.floor(tokens + EPSILON),
      resetMs: Math.max(0, Math.ceil(lag + (policy.capacity - tokens) * perToken - 1e-6)),
      retryAfterMs: allowed ? 0 : Math.max(1, Math.ceil(lag + (1 - tokens) * perToken - 1e-6)),
    },
  };
}

/** In process, for one replica. Bounded: full buckets are dropped, and past maxKeys the least recently used go. */
export class MemoryRateLimiter implements RateLimiter {
  static readonly MAX_KEYS = 100_000;
  /** Least recently used first: a take moves its bucket to the end. */
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly policy: RatePolicy,
    private readonly clock: Clock,
    private readonly maxKeys = MemoryRateLimiter.MAX_KEYS,
  ) {
    if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new RangeError('maxKeys must be a positive integer');
  }

  /** Buckets held (those not yet full again, at most maxKeys). */
  get size(): number {
    return this.buckets.size;
  }

  async take(key: string): Promise<RateDecision> {
    const id = bucketId(key);
    const now = this.clock.now().getTime();
    const { bucket, decision } = takeToken(this.policy, this.buckets.get(id), now);
    this.buckets.delete(id);
    this.buckets.set(id, bucket);
    this.sweep(now);
    return decision;
  }

  async peek(key: string): Promise<RateDecision> {
    return takeToken(this.policy, this.buckets.get(bucketId(key)), this.clock.now().getTime(), false).decision;
  }

  /**
   * A bucket untouched for a window is full, and the least recently used come first, so full buckets gather
   * at the front: dropping them there costs O(1) per take. Beyond maxKeys live buckets go too (their
   * partitions start full again): memory stays bounded whatever the number of partitions.
   */
  private sweep(now: number): void {
    const { capacity, windowMs } = this.policy;
    for (const [id, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) * capacity) / windowMs < capacity - EPSILON) break;
      this.buckets.delete(id);
    }
    while (this.buckets.size > this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
  }
}

// takeToken in Lua, atomic per bucket. Time is the Redis server's (TIME: seconds, microseconds), so every
// replica reads the same clock. A refusal writes nothing; a take stores the bucket until it would be full
// again (an absent bucket is a full one); ARGV[3] 0 only looks. Returns {allowed, remaining, resetMs,
// retryAfterMs}, integers.
const TAKE = `
if redis.replicate_commands then redis.replicate_commands() end
local capacity = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local tokens, at = capacity, now
local stored = redis.call('HMGET', KEYS[1], 'tokens', 'at')
if stored[1] and stored[2] then
  local last = tonumber(stored[2])
  at = math.max(last, now)
  tokens = math.min(capacity, tonumber(stored[1]) + (at - last) * capacity / window)
end
local take = tonumber(ARGV[3]) == 1
local allowed = 0
if tokens >= 1 - 1e-9 then
  allowed = 1
  if take then tokens = math.max(0, tokens - 1) end
end
local perToken = window / capacity
local lag = at - now
local reset = math.max(0, math.ceil(lag + (capacity - tokens) * perToken - 1e-6))
local retry = 0
if allowed == 1 then
  if take then
    redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%.17g', at))
    redis.call('PEXPIRE', KEYS[1], math.max(1, reset))
  end
else
  retry = math.max(1, math.ceil(lag + (1 - tokens) * perToken - 1e-6))
end
return {allowed, math.floor(tokens + 1e-9), reset, retry}`;

/** ioredis sends EVALSHA and falls back to EVAL on NOSCRIPT for commands made with defineCommand. */
const COMMAND = 'porticoRateLimitTake';
type TakeCommand = (key: string, capacity: number, windowMs: number, take: 0 | 1) => Promise<unknown>;

/** Shared by every replica through Redis. A Redis that errs or does not answer in time is a 503, never a guess. */
export class RedisRateLimiter implements RateLimiter {
  private readonly timeoutMs: number;
  private readonly prefix: string;

  constructor(
    private readonly redis: Redis,
    private readonly policy: RatePolicy,
    options: { timeoutMs?: number; prefix?: string } = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 500;
    this.prefix = options.prefix ?? `portico:rl:${policy.name}:`;
    redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: TAKE });
  }

  take(key: string): Promise<RateDecision> {
    return this.run(key, 1);
  }

  peek(key: string): Promise<RateDecision> {
    return this.run(key, 0);
  }

  private async run(key: string, take: 0 | 1): Promise<RateDecision> {
    const command = (this.redis as unknown as Record<typeof COMMAND, TakeCommand>)[COMMAND];
    const reply = await withDeadline(
      () => command.call(this.redis, this.prefix + bucketId(key), this.policy.capacity, this.policy.windowMs, take),
      this.timeoutMs,
    );
    if (!Array.isArray(reply) || reply.length !== 4 || !reply.every((n) => typeof n === 'number')) {
      throw new Error(`unexpected reply from the rate-limit script: ${JSON.stringify(reply)}`);
    }
    const [allowed, remaining, resetMs, retryAfterMs] = reply as [number, number, number, number];
    return { allowed: allowed === 1, remaining, resetMs, retryAfterMs };
  }
}

/** The operation's result, or 503 when it fails or has not answered within `timeoutMs`. */
async function withDeadline<T>(operation: () => Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(serviceUnavailable('Redis')), timeoutMs);
  });
  try {
    // race() subscribes to the operation, so its late failure after the deadline is not left unhandled.
    return await Promise.race([operation(), deadline]);
  } catch (error) {
    throw error instanceof AppError ? error : serviceUnavailable('Redis');
  } finally {
    clearTimeout(timer);
  }
}
