// The only reader of process.env: every setting parsed, validated, typed and frozen at start-up, so a bad
// value stops the process with a clear message instead of failing on the first request that needs it.
import path from 'node:path';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  readonly port: number;
  readonly host: string;
  /** Unset: the embedded MongoDB-compatible database is started on demand. */
  readonly mongodbUri: string | undefined;
  readonly mongodbDatabase: string;
  readonly devdbPort: number;
  readonly dataDir: string;
  /** Unset: one replica; idempotency records and caches live in process. */
  readonly redisUrl: string | undefined;
  /** Prefix of `_links.self.href` and other absolute links; no trailing slash. */
  readonly publicBaseUrl: string | undefined;
  /** Unset: the admin surface answers 404 everywhere. */
  readonly adminToken: string | undefined;
  /** Signs list cursors and seals idempotency records. Unset (one replica only): random per process. */
  readonly cursorSecret: string;
  readonly cursorSecretIsEphemeral: boolean;
  readonly objectStorage: string;
  readonly catalog: { readonly namespace: string; readonly name: string };
  /** How often each replica checks MongoDB for a newly activated catalog snapshot (the backstop to Redis). */
  readonly catalogPollMs: number;
  /** Publish the bundled demo catalog when the served catalog has none (default: with the embedded database). */
  readonly demoCatalog: boolean;
  readonly logLevel: LogLevel;
  /** Development and tests only: admits http and private/loopback webhook hosts. */
  readonly webhookAllowPrivateUrls: boolean;
  readonly shutdownTimeoutMs: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: NodeJS.ProcessEnv = process.env, randomSecret = defaultRandomSecret): Config {
  const problems: string[] = [];
  const str = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = str(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return Number(raw);
  };
  const bool = (name: string, fallback = false): boolean => {
    const raw = str(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (raw === 'false' || raw === '0') return false;
    if (raw === 'true' || raw === '1') return true;
    problems.push(`${name} must be true or false (got "${raw}")`);
    return false;
  };

  const mongodbUri = str('MONGODB_URI');
  let mongodbDatabase = 'portico';
  if (mongodbUri !== undefined) {
    if (!/^mongodb(\+srv)?:\/\//.test(mongodbUri)) problems.push('MONGODB_URI must start with mongodb:// or mongodb+srv://');
    const dbName = /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]+)/.exec(mongodbUri)?.[1];
    if (dbName) mongodbDatabase = decodeURIComponent(dbName);
  }

  const redisUrl = str('REDIS_URL');
  if (redisUrl !== undefined && !/^rediss?:\/\//.test(redisUrl)) problems.push('REDIS_URL must start with redis:// or rediss://');

  let publicBaseUrl = str('PUBLIC_BASE_URL');
  if (publicBaseUrl !== undefined) {
    try {
      const url = new URL(publicBaseUrl);
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('scheme');
      if (url.search || url.hash) throw new Error('query');
      publicBaseUrl = url.toString().replace(/\/+$/, '');
    } catch {
      problems.push('PUBLIC_BASE_URL must be an absolute http(s) URL without query or fragment');
    }
  }

  const adminToken = str('PORTICO_ADMIN_TOKEN');
  if (adminToken !== undefined && adminToken.length < 16) problems.push('PORTICO_ADMIN_TOKEN must be at least 16 characters');

  const configuredCursorSecret = str('PORTICO_CURSOR_SECRET');
  if (configuredCursorSecret !== undefined && configuredCursorSecret.length < 32) {
    problems.push('PORTICO_CURSOR_SECRET must be at least 32 characters');
  }

  if (redisUrl !== undefined && configuredCursorSecret === undefined) {
    problems.push('PORTICO_CURSOR_SECRET is required when REDIS_URL is set: replicas must share it to honour each other\'s cursors and idempotency records');
  }

  const dataDir = path.resolve(str('PORTICO_DATA_DIR') ?? '.data');
  const objectStorage = str('PORTICO_OBJECT_STORAGE') ?? `file://${path.join(dataDir, 'objects')}`;
  if (!/^(file|s3):\/\//.test(objectStorage)) problems.push('PORTICO_OBJECT_STORAGE must be file://<dir> or s3://<bucket>?…');

  const catalogRaw = str('PORTICO_CATALOG') ?? 'default/default';
  const catalogMatch = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(catalogRaw);
  if (!catalogMatch) problems.push('PORTICO_CATALOG must be <namespace>/<name> (Kubernetes names)');

  const logLevel = (str('LOG_LEVEL') ?? 'info').toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);

  const config: Config = {
    port: int('PORT', 8080, 0, 65535),
    host: str('HOST') ?? '0.0.0.0',
    mongodbUri,
    mongodbDatabase,
    devdbPort: int('PORTICO_DEVDB_PORT', 27017, 1, 65535),
    dataDir,
    redisUrl,
    publicBaseUrl,
    adminToken,
    cursorSecret: configuredCursorSecret ?? randomSecret(),
    cursorSecretIsEphemeral: configuredCursorSecret === undefined,
    objectStorage,
    catalog: Object.freeze({ namespace: catalogMatch?.[1] ?? 'default', name: catalogMatch?.[3] ?? 'default' }),
    catalogPollMs: int('PORTICO_CATALOG_POLL_MS', 5000, 100, 60_000),
    demoCatalog: bool('PORTICO_DEMO_CATALOG', mongodbUri === undefined),
    logLevel,
    webhookAllowPrivateUrls: bool('PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS'),
    shutdownTimeoutMs: int('PORTICO_SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

function defaultRandomSecret(): string {
  return globalThis.crypto.randomUUID() + globalThis.crypto.randomUUID();
}
