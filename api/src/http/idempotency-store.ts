// Where idempotency records live: in process for one replica, in Redis when replicas share the work.
// claim() is the single atomic step that guarantees one execution per (credential, key); complete() and
// release() act only while the claim is still the caller's.
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { serviceUnavailable } from './errors.js';

/** A stored outcome, sealed (encrypted) by the middleware: the store never holds readable responses. */
export type IdempotencyRecord =
  | { state: 'running'; fingerprint: string; owner: string; expiresAt: number }
  | { state: 'done'; fingerprint: string; sealed: string; expiresAt: number };

export type RunningRecord = Extract<IdempotencyRecord, { state: 'running' }>;
export type DoneRecord = Extract<IdempotencyRecord, { state: 'done' }>;

export interface IdempotencyStore {
  /** Stores `running` unless a live record exists; returns that live record, or null when the claim won. */
  claim(scope: string, running: RunningRecord, now: number): Promise<IdempotencyRecord | null>;
  /** Replaces the caller's running claim (`owner`) with the outcome. */
  complete(scope: string, owner: string, done: DoneRecord, now: number): Promise<void>;
  /** Drops a running claim, only if it is still ours. */
  release(scope: string, owner: string): Promise<void>;
}

/** Bounded: past MAX_RECORDS the least recently used records go first. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  static readonly MAX_RECORDS = 100_000;
  private readonly records = new LRUCache<string, IdempotencyRecord>({ max: MemoryIdempotencyStore.MAX_RECORDS });

  async claim(scope: string, running: RunningRecord, now: number) {
    const current = this.records.get(scope);
    if (current && current.expiresAt > now) return current;
    this.records.set(scope, running);
    return null;
  }

  async complete(scope: string, owner: string, done: DoneRecord) {
    const current = this.records.get(scope);
    if (current?.state === 'running' && current.owner === owner) this.records.set(scope, done);
  }

  async release(scope: string, owner: string) {
    const current = this.records.get(scope);
    if (current?.state === 'running' && current.owner === owner) this.records.delete(scope);
  }
}

// The record's own expiresAt (from the injected clock) decides liveness; Redis TTLs only collect garbage.
const CLAIM = `
local current = redis.call('GET', KEYS[1])
if current then
  local record = cjson.decode(current)
  if tonumber(record.expiresAt) > tonumber(ARGV[2]) then return current end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return false`;

const IF_OWNER = (then: string) => `
local current = redis.call('GET', KEYS[1])
if current and cjson.decode(current).owner == ARGV[1] then ${then} end
return 1`;
const COMPLETE = IF_OWNER(`redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])`);
const RELEASE = IF_OWNER(`redis.call('DEL', KEYS[1])`);

export class RedisIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'portico:idem:',
  ) {}

  async claim(scope: string, running: RunningRecord, now: number) {
    const ttl = Math.max(1, running.expiresAt - now);
    const current = (await this.call(() => this.redis.eval(CLAIM, 1, this.prefix + scope, JSON.stringify(running), String(now), String(ttl)))) as string | null;
    return current ? (JSON.parse(current) as IdempotencyRecord) : null;
  }

  async complete(scope: string, owner: string, done: DoneRecord, now: number) {
    const ttl = Math.max(1, done.expiresAt - now);
    await this.call(() => this.redis.eval(COMPLETE, 1, this.prefix + scope, owner, JSON.stringify(done), String(ttl)));
  }

  async release(scope: string, owner: string) {
    await this.call(() => this.redis.eval(RELEASE, 1, this.prefix + scope, owner));
  }

  private async call<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch {
      throw serviceUnavailable('Redis');
    }
  }
}
