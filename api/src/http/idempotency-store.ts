// Where idempotency records live: in process for one replica, in Redis when replicas share the work.
// claim() is the single atomic step that guarantees one execution per (credential, key).
import type { Redis } from 'ioredis';
import { serviceUnavailable } from './errors.js';

export interface StoredResponse {
  status: number;
  body: string | null;
  headers: Record<string, string>;
}

export type IdempotencyRecord =
  | { state: 'running'; fingerprint: string; owner: string; expiresAt: number }
  | { state: 'done'; fingerprint: string; response: StoredResponse; expiresAt: number };

export interface IdempotencyStore {
  /** Stores `running` unless a live record exists; returns that live record, or null when the claim won. */
  claim(scope: string, running: Extract<IdempotencyRecord, { state: 'running' }>, now: number): Promise<IdempotencyRecord | null>;
  complete(scope: string, done: Extract<IdempotencyRecord, { state: 'done' }>, now: number): Promise<void>;
  /** Drops a running claim, only if it is still ours. */
  release(scope: string, owner: string): Promise<void>;
}

export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly records = new Map<string, IdempotencyRecord>();
  private claims = 0;

  async claim(scope: string, running: Extract<IdempotencyRecord, { state: 'running' }>, now: number) {
    if (++this.claims % 1000 === 0) this.sweep(now);
    const current = this.records.get(scope);
    if (current && current.expiresAt > now) return current;
    this.records.set(scope, running);
    return null;
  }

  async complete(scope: string, done: Extract<IdempotencyRecord, { state: 'done' }>) {
    this.records.set(scope, done);
  }

  async release(scope: string, owner: string) {
    const current = this.records.get(scope);
    if (current?.state === 'running' && current.owner === owner) this.records.delete(scope);
  }

  private sweep(now: number) {
    for (const [scope, record] of this.records) if (record.expiresAt <= now) this.records.delete(scope);
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

const RELEASE = `
local current = redis.call('GET', KEYS[1])
if current and cjson.decode(current).owner == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`;

export class RedisIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'portico:idem:',
  ) {}

  async claim(scope: string, running: Extract<IdempotencyRecord, { state: 'running' }>, now: number) {
    const ttl = Math.max(1, running.expiresAt - now);
    const current = (await this.call(() => this.redis.eval(CLAIM, 1, this.prefix + scope, JSON.stringify(running), String(now), String(ttl)))) as string | null;
    return current ? (JSON.parse(current) as IdempotencyRecord) : null;
  }

  async complete(scope: string, done: Extract<IdempotencyRecord, { state: 'done' }>, now: number) {
    const ttl = Math.max(1, done.expiresAt - now);
    await this.call(() => this.redis.set(this.prefix + scope, JSON.stringify(done), 'PX', ttl));
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
