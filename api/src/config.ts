// The API's only reader of process.env: every setting parsed, validated, typed and frozen at start-up, so a
// bad value stops the process with a clear message instead of failing on the first request that needs it.
// The settings every Portico process shares are parsed by core (readCoreConfig); the rest are the API's.
import path from 'node:path';
import { ConfigError, EnvReader, readCoreConfig, type CoreConfig, type LogLevel } from '#core/config.js';
import { parseDuration } from '#core/duration.js';
import { parseRatePolicy, type RatePolicy } from './shared/infra/rate-limit.js';

export { ConfigError, type LogLevel };

export interface Config extends CoreConfig {
  readonly port: number;
  readonly host: string;
  /** Prefix of `_links.self.href` and other absolute links; no trailing slash. */
  readonly publicBaseUrl: string | undefined;
  /** Without PUBLIC_BASE_URL: take the origin from X-Forwarded-Proto/-Host (behind a proxy that sets them). */
  readonly trustProxy: boolean;
  /** Unset: the admin surface answers 404 everywhere. */
  readonly adminToken: string | undefined;
  /** Signs list cursors and seals idempotency records. Unset (one replica only): random per process. */
  readonly cursorSecret: string;
  readonly cursorSecretIsEphemeral: boolean;
  /** How often each replica checks MongoDB for a newly activated catalog snapshot (the backstop to Redis). */
  readonly catalogPollMs: number;
  /** Publish the bundled demo catalog when the served catalog has none (default: with the embedded database). */
  readonly demoCatalog: boolean;
  /** Development and tests only: admits http and private/loopback webhook hosts. */
  readonly webhookAllowPrivateUrls: boolean;
  readonly webhooks: WebhookSettings;
  /** The initiate bucket per (customer account, app user): docs/api.md, "Connecting a patient's health system". */
  readonly initiateRateLimit: RatePolicy;
  /** The initiate token bucket per publishable key, whatever the app user (docs/api.md, Abuse limits). */
  readonly initiateKeyRateLimit: RatePolicy;
  readonly shutdownTimeoutMs: number;
  /** Every request is answered within this: 503 with Retry-After when its work is not done by then
   * (shared/http/deadline.ts). */
  readonly requestTimeoutMs: number;
  /** Write requests doing their work at once per process; the rest wait their turn (shared/http/admission.ts). */
  readonly maxConcurrentWrites: number;
  /** The gateway's per-connection index budget per replica, in MiB (0: every search reads the database). */
  readonly gatewayIndexMb: number;
  /**
   * Where a sync keeps the attachments it fetches (PORTICO_ATTACHMENT_STORAGE: file://<dir> or s3://<bucket>?…; a
   * private store, never served but through the FHIR face's checks), and the largest it fetches
   * (PORTICO_ATTACHMENT_MAX_BYTES, 5 MiB).
   */
  readonly attachments: { storage: string; maxBytes: number };
  readonly smart: SmartSettings;
  /** The access log (docs/api.md, "The access log"): how long its entries are kept (PORTICO_AUDIT_RETENTION). */
  readonly audit: { retentionMs: number };
}

/** Connections to health systems (docs/connecting.md). */
export interface SmartSettings {
  /** PORTICO_SMART_CLIENTS: the JSON file of client registrations; unset: no brand is connectable. */
  readonly clientsFile: string | undefined;
  /** PORTICO_TOKEN_KEYS, first one encrypts; unset: the process makes a development key (main.ts). */
  readonly tokenKeys: readonly TokenKey[] | undefined;
  /** Development and tests only: admits http and loopback health-system endpoints. */
  readonly allowInsecure: boolean;
  /** How often each connection's records are read again from its health system. */
  readonly syncIntervalMs: number;
  /** Start the sandbox EHR beside the API (default: with the embedded database), and where. With it, the API
   * registers itself as the sandbox's public client `portico-demo` for brands on 127.0.0.1. */
  readonly sandbox: boolean;
  readonly sandboxPort: number;
}

/** One key of the token vault: AES-256 (32 bytes), named by `kid` in what it encrypts. */
export interface TokenKey {
  readonly kid: string;
  readonly key: Buffer;
}

/** Webhook delivery (docs/api.md, "Receiving webhooks"). */
export interface WebhookSettings {
  /** Run the dispatcher in this API process (every replica does by default). */
  readonly dispatch: boolean;
  /** Delays before the 2nd, 3rd, … attempt (±20 % jitter is added). */
  readonly retryScheduleMs: readonly number[];
  /** Consecutive failures, and how long without a success, that disable an endpoint. */
  readonly disableAfter: number;
  readonly disableWindowMs: number;
  /** For the whole exchange of one attempt. */
  readonly timeoutMs: number;
  /** How long a dispatcher holds an event or a delivery it works on (longer than an attempt). */
  readonly leaseMs: number;
  /** How often the dispatcher looks for work that no wake-up announced (the backstop). */
  readonly pollMs: number;
  /** Attempts in flight at once in this process (at most 10 of them per endpoint). */
  readonly concurrency: number;
}

const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h';
const DEFAULT_INITIATE_RATE_LIMIT = '10/60s';
const DEFAULT_INITIATE_KEY_RATE_LIMIT = '60/60s';

/**
 * `servesRequests: false` for a process that signs no cursor and seals no idempotency record (`portico admin`):
 * it needs no shared PORTICO_CURSOR_SECRET beside REDIS_URL.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  randomSecret = defaultRandomSecret,
  { servesRequests = true }: { servesRequests?: boolean } = {},
): Config {
  const read = new EnvReader(env);
  const core = readCoreConfig(read);

  let publicBaseUrl = read.str('PUBLIC_BASE_URL');
  if (publicBaseUrl !== undefined) {
    try {
      const url = new URL(publicBaseUrl);
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('scheme');
      if (url.search || url.hash) throw new Error('query');
      publicBaseUrl = url.toString().replace(/\/+$/, '');
    } catch {
      read.problem('PUBLIC_BASE_URL must be an absolute http(s) URL without query or fragment');
    }
  }

  const adminToken = read.str('PORTICO_ADMIN_TOKEN');
  if (adminToken !== undefined && adminToken.length < 16)
    read.problem('PORTICO_ADMIN_TOKEN must be at least 16 characters');

  const configuredCursorSecret = read.str('PORTICO_CURSOR_SECRET');
  if (configuredCursorSecret !== undefined && configuredCursorSecret.length < 32)
    read.problem('PORTICO_CURSOR_SECRET must be at least 32 characters');
  if (servesRequests && core.redisUrl !== undefined && configuredCursorSecret === undefined) {
    read.problem(
      "PORTICO_CURSOR_SECRET is required when REDIS_URL is set: replicas must share it to honour each other's cursors and idempotency records",
    );
  }

  const config: Config = {
    ...core,
    port: read.int('PORT', 8080, 0, 65535),
    // Loopback unless told otherwise: a development API (admin surface included) is not on the network by
    // accident. The image sets HOST=0.0.0.0.
    host: read.str('HOST') ?? '127.0.0.1',
    publicBaseUrl,
    adminToken,
    cursorSecret: configuredCursorSecret ?? randomSecret(),
    cursorSecretIsEphemeral: configuredCursorSecret === undefined,
    catalogPollMs: read.int('PORTICO_CATALOG_POLL_MS', 5000, 100, 60_000),
    demoCatalog: read.bool('PORTICO_DEMO_CATALOG', core.mongodbUri === undefined),
    webhookAllowPrivateUrls: read.bool('PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS'),
    trustProxy: read.bool('PORTICO_TRUST_PROXY'),
    webhooks: readWebhookSettings(read),
    initiateRateLimit: readRatePolicy(read, 'PORTICO_INITIATE_RATE_LIMIT', DEFAULT_INITIATE_RATE_LIMIT, 'initiate'),
    initiateKeyRateLimit: readRatePolicy(
      read,
      'PORTICO_INITIATE_KEY_RATE_LIMIT',
      DEFAULT_INITIATE_KEY_RATE_LIMIT,
      'initiate-key',
    ),
    shutdownTimeoutMs: read.int('PORTICO_SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    requestTimeoutMs: read.int('PORTICO_REQUEST_TIMEOUT_MS', 5_000, 100, 600_000),
    maxConcurrentWrites: read.int('PORTICO_MAX_CONCURRENT_WRITES', 32, 1, 10_000),
    // A whole record of about 11,000 resources (a long synthetic life) takes about 45 MB of index: a quarter of this.
    gatewayIndexMb: read.int('PORTICO_GATEWAY_INDEX_MB', 256, 0, 65_536),
    attachments: {
      storage: attachmentStorage(read, core.dataDir),
      maxBytes: read.int('PORTICO_ATTACHMENT_MAX_BYTES', 5 * 1024 * 1024, 1, 64 * 1024 * 1024),
    },
    smart: readSmartSettings(read, core.mongodbUri === undefined),
    audit: { retentionMs: readRetention(read) },
  };
  read.check();
  return Object.freeze(config);
}

function readWebhookSettings(read: EnvReader): WebhookSettings {
  const duration = (name: string, fallback: string, min: number): number => {
    const raw = read.str(name) ?? fallback;
    const ms = parseDuration(raw);
    if (ms === undefined || ms < min)
      read.problem(`${name} must be a duration such as 30s, 5m or 24h, at least ${min} ms (got "${raw}")`);
    return ms ?? parseDuration(fallback)!;
  };
  const scheduleRaw = read.str('PORTICO_WEBHOOK_RETRY_SCHEDULE') ?? DEFAULT_RETRY_SCHEDULE;
  const retryScheduleMs = scheduleRaw.split(',').map((part) => parseDuration(part.trim()));
  if (retryScheduleMs.length > 20 || retryScheduleMs.some((ms) => ms === undefined || ms < 1)) {
    read.problem(
      `PORTICO_WEBHOOK_RETRY_SCHEDULE must be up to 20 comma-separated durations such as 5s,5m,30m (got "${scheduleRaw}")`,
    );
  }
  const timeoutMs = read.int('PORTICO_WEBHOOK_TIMEOUT_MS', 15_000, 100, 60_000);
  const leaseMs = read.int('PORTICO_WEBHOOK_LEASE_MS', 60_000, 1_000, 3_600_000);
  if (leaseMs <= timeoutMs) read.problem('PORTICO_WEBHOOK_LEASE_MS must be longer than PORTICO_WEBHOOK_TIMEOUT_MS');
  return Object.freeze({
    dispatch: read.bool('PORTICO_WEBHOOK_DISPATCH', true),
    retryScheduleMs: Object.freeze(
      retryScheduleMs.every((ms) => ms !== undefined)
        ? retryScheduleMs
        : DEFAULT_RETRY_SCHEDULE.split(',').map((p) => parseDuration(p)!),
    ),
    disableAfter: read.int('PORTICO_WEBHOOK_DISABLE_AFTER', 15, 1, 1000),
    disableWindowMs: duration('PORTICO_WEBHOOK_DISABLE_WINDOW', '24h', 0),
    timeoutMs,
    leaseMs,
    pollMs: read.int('PORTICO_WEBHOOK_POLL_MS', 5000, 50, 600_000),
    concurrency: read.int('PORTICO_WEBHOOK_CONCURRENCY', 256, 1, 10_000),
  });
}

const DAY_MS = 86_400_000;

/**
 * PORTICO_AUDIT_RETENTION: `6y` by default (HIPAA's six years), or days (`2200d`), or a shorter duration (`24h`, for
 * trials), at least an hour. A year counts 366 days, so a retention in years is never shorter than that many calendar
 * years.
 */
function readRetention(read: EnvReader): number {
  const raw = read.str('PORTICO_AUDIT_RETENTION') ?? '6y';
  const inDays = /^([0-9]{1,5})(y|d)$/.exec(raw);
  const ms = inDays ? Number(inDays[1]) * (inDays[2] === 'y' ? 366 : 1) * DAY_MS : parseDuration(raw);
  if (ms === undefined || ms < 3_600_000) {
    read.problem(
      `PORTICO_AUDIT_RETENTION must be years (6y), days (2200d) or a duration of at least 1h (got "${raw}")`,
    );
    return 6 * 366 * DAY_MS;
  }
  return ms;
}

function readSmartSettings(read: EnvReader, embedded: boolean): SmartSettings {
  const rawKeys = read.str('PORTICO_TOKEN_KEYS');
  let tokenKeys: TokenKey[] | undefined;
  if (rawKeys !== undefined) {
    tokenKeys = parseTokenKeys(rawKeys);
    if (!tokenKeys) {
      read.problem(
        'PORTICO_TOKEN_KEYS must be kid:base64key[,kid:base64key…]: distinct kids of 1-32 letters, digits, _ or -, each key 32 bytes in base64 (make one with `openssl rand -base64 32`)',
      );
    }
  }
  const rawInterval = read.str('PORTICO_SYNC_INTERVAL') ?? '6h';
  const syncIntervalMs = parseDuration(rawInterval);
  if (syncIntervalMs === undefined || syncIntervalMs < 1000)
    read.problem(`PORTICO_SYNC_INTERVAL must be a duration such as 30m or 6h, at least 1s (got "${rawInterval}")`);
  const sandbox = read.bool('PORTICO_SANDBOX', embedded);
  return Object.freeze({
    clientsFile: read.str('PORTICO_SMART_CLIENTS'),
    tokenKeys: tokenKeys && Object.freeze(tokenKeys),
    // The sandbox is plain http on loopback: with it (and the embedded database of development), such endpoints are
    // admitted unless told otherwise.
    allowInsecure: read.bool('PORTICO_SMART_ALLOW_INSECURE', sandbox && embedded),
    syncIntervalMs: syncIntervalMs ?? 6 * 3_600_000,
    sandbox,
    sandboxPort: read.int('PORTICO_SANDBOX_PORT', 8095, 1, 65535),
  });
}

/** `kid:base64key,…` → the keys, or undefined when any part is malformed. */
export function parseTokenKeys(raw: string): TokenKey[] | undefined {
  const keys: TokenKey[] = [];
  for (const part of raw.split(',')) {
    const match = /^([A-Za-z0-9_-]{1,32}):([A-Za-z0-9+/]{43}=)$/.exec(part.trim());
    if (!match) return undefined;
    const key = Buffer.from(match[2]!, 'base64');
    if (key.length !== 32 || keys.some((k) => k.kid === match[1])) return undefined;
    keys.push(Object.freeze({ kid: match[1]!, key }));
  }
  return keys.length > 0 ? keys : undefined;
}

function readRatePolicy(read: EnvReader, variable: string, fallback: string, name: string): RatePolicy {
  const raw = read.str(variable) ?? fallback;
  const policy = parseRatePolicy(raw, name);
  if (!policy)
    read.problem(
      `${variable} must be <requests>/<window> such as 10/60s, 5/1m or 100/1h: 1 to 10000 requests per whole-second window from 1s to 24h (got "${raw}")`,
    );
  return policy ?? parseRatePolicy(fallback, name)!;
}

/**
 * The environment of a child process the API starts (the demo catalog's `portico-operator import`): this
 * process's own, so credentials such as the AWS SDK's reach it, with `overrides` on top.
 */
export function childEnvironment(overrides: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...overrides };
}

function defaultRandomSecret(): string {
  return globalThis.crypto.randomUUID() + globalThis.crypto.randomUUID();
}

/** PORTICO_ATTACHMENT_STORAGE, by default a folder of its own under the data folder (not the public objects'). */
function attachmentStorage(read: EnvReader, dataDir: string): string {
  const spec = read.str('PORTICO_ATTACHMENT_STORAGE') ?? `file://${path.join(dataDir, 'attachments')}`;
  if (!/^(file|s3):\/\//.test(spec)) read.problem('PORTICO_ATTACHMENT_STORAGE must be file://<dir> or s3://<bucket>?…');
  return spec;
}
