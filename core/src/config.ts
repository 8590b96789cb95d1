// The settings every Portico process shares (the database, Redis, object storage, which catalog, logging),
// parsed from the environment a program's own config module hands over: core never reads process.env, so
// each program keeps exactly one place that does.
import path from 'node:path';
import os from 'node:os';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface CoreConfig {
  /** Unset: the embedded MongoDB-compatible database is started on demand. */
  readonly mongodbUri: string | undefined;
  readonly mongodbDatabase: string;
  /**
   * Deadline of each step of a MongoDB call on the request path (finding the server, taking a connection,
   * connecting, each reply): a database that is down or stalls answers 503 instead of hanging the request.
   */
  readonly mongodbTimeoutMs: number;
  /** The same for each reply of the few long operations (the second client of core/src/infra/mongo.ts). */
  readonly mongodbLongTimeoutMs: number;
  readonly devdbPort: number;
  readonly dataDir: string;
  /** The per-machine tool cache (toolCacheDir; infra/tool-cache.ts), where the embedded database is built. */
  readonly cacheDir: string;
  /** Unset: one replica; shared state lives in process. */
  readonly redisUrl: string | undefined;
  /** Deadline of every Redis command (and of connecting): a Redis that is down or stalls answers 503. */
  readonly redisTimeoutMs: number;
  readonly objectStorage: string;
  /** The BrandCatalog (namespace/name) the API serves. */
  readonly catalog: Readonly<CatalogRef>;
  readonly logLevel: LogLevel;
}

/** The variables that place the cache, as the scripts read them (core reads no environment itself: each program's config module hands it over). */
export interface CacheEnvironment {
  PORTICO_CACHE_DIR?: string | undefined;
  XDG_CACHE_HOME?: string | undefined;
  HOME?: string | undefined;
}

/** `${PORTICO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/portico}`, absolute (an empty variable counts as unset). */
export function toolCacheDir(env: CacheEnvironment): string {
  const dir =
    env.PORTICO_CACHE_DIR || path.join(env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache'), 'portico');
  return path.resolve(dir);
}

/** A BrandCatalog by namespace and name. */
export interface CatalogRef {
  namespace: string;
  name: string;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** Typed reads of one environment that collect every problem, so a bad start names all of them at once. */
export class EnvReader {
  readonly problems: string[] = [];

  constructor(private readonly env: Readonly<Record<string, string | undefined>>) {}

  /** The trimmed value; undefined when unset or blank. */
  str(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const raw = this.str(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return Number(raw);
  }

  bool(name: string, fallback = false): boolean {
    const raw = this.str(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (raw === 'false' || raw === '0') return false;
    if (raw === 'true' || raw === '1') return true;
    this.problems.push(`${name} must be true or false (got "${raw}")`);
    return false;
  }

  problem(message: string): void {
    this.problems.push(message);
  }

  /** Throws ConfigError naming every problem found so far. */
  check(): void {
    if (this.problems.length > 0) throw new ConfigError(this.problems);
  }
}

export function readCoreConfig(read: EnvReader): CoreConfig {
  const mongodbUri = read.str('MONGODB_URI');
  let mongodbDatabase = 'portico';
  if (mongodbUri !== undefined) {
    if (!/^mongodb(\+srv)?:\/\//.test(mongodbUri))
      read.problem('MONGODB_URI must start with mongodb:// or mongodb+srv://');
    const dbName = /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]+)/.exec(mongodbUri)?.[1];
    if (dbName) mongodbDatabase = decodeURIComponent(dbName);
  }

  const redisUrl = read.str('REDIS_URL');
  if (redisUrl !== undefined && !/^rediss?:\/\//.test(redisUrl))
    read.problem('REDIS_URL must start with redis:// or rediss://');

  const dataDir = path.resolve(read.str('PORTICO_DATA_DIR') ?? '.data');
  const objectStorage = read.str('PORTICO_OBJECT_STORAGE') ?? `file://${path.join(dataDir, 'objects')}`;
  if (!/^(file|s3):\/\//.test(objectStorage))
    read.problem('PORTICO_OBJECT_STORAGE must be file://<dir> or s3://<bucket>?…');

  const catalogRaw = read.str('PORTICO_CATALOG') ?? 'default/default';
  const catalog = parseCatalogRef(catalogRaw);
  if (!catalog) read.problem('PORTICO_CATALOG must be <namespace>/<name> (Kubernetes names)');

  const mongodbTimeoutMs = read.int('PORTICO_MONGODB_TIMEOUT_MS', 2500, 100, 120_000);
  const mongodbLongTimeoutMs = read.int('PORTICO_MONGODB_LONG_TIMEOUT_MS', 60_000, 1000, 3_600_000);
  if (mongodbLongTimeoutMs < mongodbTimeoutMs)
    read.problem('PORTICO_MONGODB_LONG_TIMEOUT_MS must not be shorter than PORTICO_MONGODB_TIMEOUT_MS');

  const logLevel = (read.str('LOG_LEVEL') ?? 'info').toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) read.problem(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);

  return {
    mongodbUri,
    mongodbDatabase,
    mongodbTimeoutMs,
    mongodbLongTimeoutMs,
    devdbPort: read.int('PORTICO_DEVDB_PORT', 27017, 1, 65535),
    dataDir,
    cacheDir: toolCacheDir({
      PORTICO_CACHE_DIR: read.str('PORTICO_CACHE_DIR'),
      XDG_CACHE_HOME: read.str('XDG_CACHE_HOME'),
      HOME: read.str('HOME'),
    }),
    redisUrl,
    redisTimeoutMs: read.int('PORTICO_REDIS_TIMEOUT_MS', 2500, 100, 120_000),
    objectStorage,
    catalog: Object.freeze(catalog ?? { namespace: 'default', name: 'default' }),
    logLevel,
  };
}

/** `<namespace>/<name>` with Kubernetes naming rules; undefined when malformed. */
export function parseCatalogRef(text: string): CatalogRef | undefined {
  const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(text);
  return match ? { namespace: match[1]!, name: match[3]! } : undefined;
}
