// The API's only reader of process.env: every setting parsed, validated, typed and frozen at start-up, so a
// bad value stops the process with a clear message instead of failing on the first request that needs it.
// The settings every Portico process shares are parsed by core (readCoreConfig); the rest are the API's.
import { ConfigError, EnvReader, readCoreConfig, type CoreConfig, type LogLevel } from '../../core/src/config.js';

export { ConfigError, type LogLevel };

export interface Config extends CoreConfig {
  readonly port: number;
  readonly host: string;
  /** Prefix of `_links.self.href` and other absolute links; no trailing slash. */
  readonly publicBaseUrl: string | undefined;
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
  readonly shutdownTimeoutMs: number;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, randomSecret = defaultRandomSecret): Config {
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
  if (adminToken !== undefined && adminToken.length < 16) read.problem('PORTICO_ADMIN_TOKEN must be at least 16 characters');

  const configuredCursorSecret = read.str('PORTICO_CURSOR_SECRET');
  if (configuredCursorSecret !== undefined && configuredCursorSecret.length < 32) read.problem('PORTICO_CURSOR_SECRET must be at least 32 characters');
  if (core.redisUrl !== undefined && configuredCursorSecret === undefined) {
    read.problem("PORTICO_CURSOR_SECRET is required when REDIS_URL is set: replicas must share it to honour each other's cursors and idempotency records");
  }

  const config: Config = {
    ...core,
    port: read.int('PORT', 8080, 0, 65535),
    host: read.str('HOST') ?? '0.0.0.0',
    publicBaseUrl,
    adminToken,
    cursorSecret: configuredCursorSecret ?? randomSecret(),
    cursorSecretIsEphemeral: configuredCursorSecret === undefined,
    catalogPollMs: read.int('PORTICO_CATALOG_POLL_MS', 5000, 100, 60_000),
    demoCatalog: read.bool('PORTICO_DEMO_CATALOG', core.mongodbUri === undefined),
    webhookAllowPrivateUrls: read.bool('PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS'),
    shutdownTimeoutMs: read.int('PORTICO_SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
  };
  read.check();
  return Object.freeze(config);
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
