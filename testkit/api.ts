// A real Portico API for one test file: its own fresh database (dropped afterwards), listening on a loopback
// port, called over real HTTP. Options choose Redis or in-process state, the clock and DNS.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type dns from 'node:dns';
import type { Redis } from 'ioredis';
import type Koa from 'koa';
import { MongoClient } from 'mongodb';
import { pino } from 'pino';
import { createApp } from '../api/src/app.js';
import { createApiServer } from '../api/src/shared/http/server.js';
import { systemClock, type Clock } from '#core/clock.js';
import { loadConfig, type Config } from '../api/src/config.js';
import { connectMongo, type Mongo } from '#core/infra/mongo.js';
import { connectRedis } from '#core/infra/redis.js';
import type { Resolver } from '../api/src/features/webhooks/url-policy.js';
import { buildServices, type Services } from '../api/src/wiring.js';
import { mongoUri, testRedisUrl } from './services.js';
import { PLATFORM_SCOPES } from '../api/src/shared/http/scopes.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/** DNS for tests: *.example.test resolve to public documentation-free addresses, a few to private ones. */
export const testResolver: Resolver = async (host) => {
  const table: Record<string, string[]> = {
    'internal.example.test': ['10.0.0.7'],
    'metadata.example.test': ['169.254.169.254'],
    'mixed.example.test': ['93.184.215.14', '127.0.0.1'],
    'mapped.example.test': ['::ffff:127.0.0.1'],
    'compat.example.test': ['::a9fe:a9fe'], // ::169.254.169.254 as resolvers print it
    'v6.example.test': ['2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  };
  if (table[host]) return table[host];
  if (host.endsWith('.example.test')) return ['93.184.215.14'];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};

/** The same table as dns.lookup answers (what webhook deliveries resolve through). */
export function lookupFrom(resolve: Resolver): typeof dns.lookup {
  return ((
    hostname: string,
    options: unknown,
    callback: (error: Error | null, address: unknown, family?: number) => void,
  ) => {
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
    resolve(hostname).then(
      (addresses) => {
        const entries = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
        if (all) callback(null, entries);
        else callback(null, entries[0]!.address, entries[0]!.family);
      },
      (error: Error) => callback(error, all ? [] : ''),
    );
  }) as unknown as typeof dns.lookup;
}

export const testLookup = lookupFrom(testResolver);

export interface TestApiOptions {
  redis?: boolean;
  /** A Redis of the test's own (implies `redis`): the fault tests pause it. */
  redisUrl?: string;
  /** A database server of the test's own (`mongodb://host:port/`): the fault tests pause it. */
  mongodbServer?: string;
  /** Run the webhook dispatcher (off by default: most tests do not deliver). */
  dispatch?: boolean;
  /** Run the sync worker of connections to health systems (off by default). */
  sync?: boolean;
  /** DNS for webhook deliveries; default: testLookup. */
  lookup?: typeof dns.lookup;
  clock?: Clock;
  env?: Record<string, string>;
  /** Receives the API's log lines (JSON), at debug level. */
  logs?: NodeJS.WritableStream;
  /** Another replica: share this API's database (the first to close drops it). */
  replicaOf?: TestApi;
}

export interface Response<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  key?: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** Sent as is (a string is not JSON-encoded). */
  raw?: string | Buffer;
  /** Aborts the request (a test that must not hang gives up on an answer). */
  signal?: AbortSignal;
}

export class TestApi {
  private constructor(
    readonly url: string,
    readonly config: Config,
    readonly services: Services,
    readonly mongo: Mongo,
    private readonly server: Server,
    /** The API's own Redis client (tests disconnect it to take Redis away). */
    readonly redis: Redis | undefined,
    /** The Koa stack alone, without the catalog fast path in front (for parity tests). */
    readonly koa: Koa,
    private readonly mongodbServer: string,
  ) {}

  static async start(options: TestApiOptions = {}): Promise<TestApi> {
    const database = options.replicaOf?.config.mongodbDatabase ?? `t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    const mongodbServer = options.mongodbServer ?? options.replicaOf?.mongodbServer ?? mongoUri();
    const redisUrl = options.redisUrl ?? (options.redis ? testRedisUrl() : undefined);
    const config = loadConfig({
      PORTICO_ADMIN_TOKEN: ADMIN_TOKEN,
      PORTICO_CURSOR_SECRET: 'test-cursor-secret-0123456789abcdef0123',
      PORTICO_CATALOG_POLL_MS: '200',
      // The embedded database on a loaded 2-core CI machine can take longer than the production deadline (2.5 s)
      // for one operation among many concurrent ones; tests of the deadline itself set it back
      // (test/api/shared/http/stalled-dependencies.test.ts).
      PORTICO_MONGODB_TIMEOUT_MS: '15000',
      // Likewise the request deadline (production: 5 s): its own tests set it
      // (test/api/shared/http/request-deadline.test.ts).
      PORTICO_REQUEST_TIMEOUT_MS: '60000',
      PORTICO_OBJECT_STORAGE: `file://${path.join(os.tmpdir(), `portico-test-objects-${database}`)}`,
      LOG_LEVEL: 'silent',
      MONGODB_URI: `${mongodbServer}${database}`,
      ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
      ...options.env,
    });
    const mongo = await connectMongo(config.mongodbUri!, config.mongodbDatabase, {
      timeoutMs: config.mongodbTimeoutMs,
      longTimeoutMs: config.mongodbLongTimeoutMs,
    });
    const redis = redisUrl ? await connectRedis(redisUrl, config.redisTimeoutMs) : undefined;
    const clock = options.clock ?? systemClock;
    let services: Services;
    try {
      services = await buildServices({
        config,
        db: mongo.db,
        longDb: mongo.longDb,
        redis,
        clock,
        resolve: testResolver,
        lookup: options.lookup ?? testLookup,
        logger: options.logs ? pino({ level: 'debug' }, options.logs) : pino({ level: 'silent' }),
      });
      await services.activeCatalog.start(config.catalogPollMs, redis);
      await services.endpointHealth.start(config.catalogPollMs, redis);
      if (options.dispatch) await services.dispatcher.start();
      if (options.sync) services.connections.syncRunner.start();
    } catch (error) {
      await mongo.close();
      await redis?.quit().catch(() => {});
      throw error;
    }
    const { app, handler } = createApp({
      config,
      services,
      clock,
      logger: options.logs ? pino({ level: 'debug' }, options.logs) : pino({ level: 'silent' }),
    });
    const server = createApiServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return new TestApi(`http://127.0.0.1:${port}`, config, services, mongo, server, redis, app, mongodbServer);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    await this.services.close();
    // A test may have closed the client on purpose: drop through a fresh one then, so nothing is left over.
    await this.mongo.db.dropDatabase().catch(async () => {
      const client = await new MongoClient(this.mongodbServer).connect();
      await client.db(this.config.mongodbDatabase).dropDatabase();
      await client.close();
    });
    await this.mongo.close();
    await this.redis?.quit().catch(() => {});
    if (this.config.objectStorage.startsWith('file://'))
      await rm(this.config.objectStorage.slice('file://'.length), { recursive: true, force: true });
  }

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<Response<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
    let body: string | Buffer | undefined;
    if (options.raw !== undefined) body = options.raw;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(this.url + path, { method, headers, body, signal: options.signal });
    const text = await response.text();
    let parsed: unknown = undefined;
    if (text !== '' && /json/.test(response.headers.get('content-type') ?? '')) parsed = JSON.parse(text);
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  admin<T = any>(method: string, path: string, body?: unknown): Promise<Response<T>> {
    return this.request<T>(method, `/api/admin/v1${path}`, { key: ADMIN_TOKEN, body });
  }

  /** A new customer account with a secret key holding `scopes` (all platform scopes by default). */
  async tenant(scopes: string[] = ALL_SCOPES): Promise<Tenant> {
    const account = await this.admin('POST', '/customer-accounts', { name: `Tenant ${randomUUID().slice(0, 8)}` });
    if (account.status !== 201) throw new Error(`cannot create account: ${account.text}`);
    const key = await this.admin('POST', `/customer-accounts/${account.body.id}/api-keys`, { scopes });
    if (key.status !== 201) throw new Error(`cannot issue key: ${key.text}`);
    return { accountId: account.body.id, key: key.body.key, keyId: key.body.id };
  }

  /** Another key of the same account. */
  async keyFor(accountId: string, scopes: string[]): Promise<{ key: string; keyId: string }> {
    const key = await this.admin('POST', `/customer-accounts/${accountId}/api-keys`, { scopes });
    return { key: key.body.key, keyId: key.body.id };
  }
}

/** Every platform scope: a key that may do anything. */
export const ALL_SCOPES = [...PLATFORM_SCOPES];

export interface Tenant {
  accountId: string;
  key: string;
  keyId: string;
}

/**
 * Registers one API for the enclosing describe block (started before its tests, closed after) and hands it
 * over with two tenants: `withTestApi((started) => ({ api, tenant } = started))`.
 */
export function withTestApi(
  assign: (started: { api: TestApi; tenant: Tenant; other: Tenant }) => void,
  options: TestApiOptions = {},
): void {
  let api: TestApi | undefined;
  before(async () => {
    api = await TestApi.start(options);
    assign({ api, tenant: await api.tenant(), other: await api.tenant() });
  });
  after(() => api?.close());
}
