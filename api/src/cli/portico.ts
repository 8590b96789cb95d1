// `portico`: the command line. `portico admin …` runs the admin surface's operations directly against the
// database (MONGODB_URI, or the embedded database started on demand); `portico serve` starts the API.
import { parseArgs } from 'node:util';
import {
  AdminListQuery,
  CreateAccount,
  CreateApp,
  CreateKey,
  UpdateAccount,
  UpdateApp,
} from '../features/admin/schema.js';
import { presentApp } from '../features/admin/presenter.js';
import type { AdminService } from '../features/admin/service.js';
import type { Services } from '../wiring.js';
import { AppError } from '../shared/http/errors.js';
import { assertValid } from '../shared/http/validate.js';
import { KEY_CACHE_TTL_MS } from '../shared/http/keys.js';
import { PLATFORM_SCOPES } from '../shared/http/scopes.js';

const USAGE = `Usage:
  portico serve                                   start the API (same as npm start)
  portico dispatch                                deliver webhooks, without serving HTTP
  portico admin create-account --name <name>
  portico admin update-account --account <id> --status ACTIVE|SUSPENDED
  portico admin issue-key --account <id> --scopes <s1,s2,…> [--name <name>]
  portico admin revoke-key --key-id <id>          (immediate on running replicas only with REDIS_URL)
  portico admin create-app --account <id> --name <name> [--grants <json>] [--redirect-uri <url>]…
  portico admin update-app --app <id> [--status ACTIVE|SUSPENDED] [--grants <json>] [--redirect-uri <url>]…
  portico admin list-accounts [--limit <n>] [--cursor <c>]
  portico admin list-apps --account <id> [--limit <n>] [--cursor <c>]
  portico admin list-keys --account <id> [--limit <n>] [--cursor <c>]   (ids and scopes: never the keys)
  portico admin rewrap-tokens                     seal every token vault entry under the first PORTICO_TOKEN_KEYS key
                                                  (resumable: run it again after an interruption; prints counts)

Without MONGODB_URI, admin commands use the embedded database the API started (PORTICO_DEVDB_PORT, 27017) and
refuse to start a new, empty one unless given --start-database.

Scopes: ${PLATFORM_SCOPES.join(' ')}
Default grants: {"resourceTypes":["Observation"],"loincCodes":["*"],"confidentiality":["N","L","M"],"sensitivity":[],"lookbackDays":null}
(create-app --grants replaces the fields it names and keeps the defaults' others.)
Output is JSON on stdout; keys are shown once. Configuration comes from the environment (see docs/deployment.md).`;

const DEFAULT_GRANTS = {
  resourceTypes: ['Observation'],
  loincCodes: ['*'],
  confidentiality: ['N', 'L', 'M'],
  sensitivity: [],
  lookbackDays: null,
};

class UsageError extends Error {}

function parseJson(name: string, raw: string | undefined, fallback: unknown): unknown {
  if (raw === undefined) return fallback;
  try {
    return JSON.parse(raw);
  } catch {
    throw new UsageError(`--${name} must be JSON`);
  }
}

/** Grants given in part keep the defaults' other fields (anything but an object is left for validation to refuse). */
function withDefaults(grants: unknown): unknown {
  return typeof grants === 'object' && grants !== null && !Array.isArray(grants)
    ? { ...DEFAULT_GRANTS, ...grants }
    : grants;
}

function required(values: Record<string, string | undefined>, name: string): string {
  const value = values[name];
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

/**
 * What a revocation made here means for API processes already running. Their key caches hear of it over
 * Redis; without REDIS_URL nothing reaches them, and each keeps accepting the key until its cached copy
 * expires.
 */
function revocationNotice(keyId: string, redis: boolean): string | undefined {
  if (redis) return undefined;
  const seconds = KEY_CACHE_TTL_MS / 1000;
  return (
    `portico: warning: key ${keyId} is revoked in the database, but REDIS_URL is not set, so running API processes were not told: ` +
    `each may keep accepting this key for up to ${seconds} s (its credential cache). Set REDIS_URL to the Redis the API uses to revoke at once on every replica.`
  );
}

type AdminRun = (admin: AdminService, redis: boolean, services: Services) => Promise<unknown>;

/**
 * The admin command, its options checked and its input validated: a usage error or bad input is answered
 * before anything is loaded or connected.
 */
function planAdmin(command: string | undefined, values: Record<string, string | undefined>): AdminRun {
  switch (command) {
    case 'create-account': {
      const { name } = assertValid(CreateAccount, { name: required(values, 'name') });
      return async (admin) => {
        const account = await admin.createAccount(name);
        return { id: account.id, name: account.name };
      };
    }
    case 'update-account': {
      const { status } = assertValid(UpdateAccount, { status: required(values, 'status') });
      const accountId = required(values, 'account');
      return async (admin) => {
        const account = await admin.setAccountStatus(accountId, status);
        return { id: account.id, name: account.name, status: account.status };
      };
    }
    case 'issue-key': {
      const input = assertValid(CreateKey, {
        scopes: required(values, 'scopes')
          .split(',')
          .map((s) => s.trim()),
        ...(values.name && { name: values.name }),
      });
      const accountId = required(values, 'account');
      return (admin) => admin.issueKey(accountId, input);
    }
    case 'revoke-key': {
      const keyId = required(values, 'key-id');
      return async (admin, redis) => {
        await admin.revokeKey(keyId);
        const notice = revocationNotice(keyId, redis);
        if (notice) console.error(notice);
        return { revoked: keyId };
      };
    }
    case 'create-app': {
      const input = assertValid(CreateApp, {
        name: required(values, 'name'),
        grants: withDefaults(parseJson('grants', values.grants, {})),
        ...(values['redirect-uri'] && { redirectUris: values['redirect-uri'] }),
      });
      const accountId = required(values, 'account');
      return async (admin) => {
        const { app, ...keys } = await admin.createApp(accountId, input.name, input.grants, input.redirectUris);
        return { ...presentApp(app), ...keys };
      };
    }
    case 'update-app': {
      const input = assertValid(UpdateApp, {
        ...(values.status && { status: values.status }),
        ...(values.grants && { grants: parseJson('grants', values.grants, undefined) }),
        ...(values['redirect-uri'] && { redirectUris: values['redirect-uri'] }),
      });
      const appId = required(values, 'app');
      return async (admin) => presentApp(await admin.updateApp(appId, input));
    }
    case 'list-accounts':
    case 'list-apps':
    case 'list-keys': {
      const { limit, cursor } = assertValid(AdminListQuery, {
        limit: values.limit === undefined ? 25 : Number(values.limit),
        ...(values.cursor !== undefined && { cursor: values.cursor }),
      });
      const page = <T>(items: T[], nextCursor: string | null) => ({ data: items, nextCursor });
      if (command === 'list-accounts')
        return async (admin) => {
          const { items, nextCursor } = await admin.listAccounts(limit, cursor);
          return page(items, nextCursor);
        };
      const accountId = required(values, 'account');
      if (command === 'list-apps')
        return async (admin) => {
          const { items, nextCursor } = await admin.listApps(accountId, limit, cursor);
          return page(items.map(presentApp), nextCursor);
        };
      return async (admin) => {
        const { items, nextCursor } = await admin.listKeys(accountId, limit, cursor);
        return page(
          items.map(({ keyId, ...key }) => ({ id: keyId, ...key })),
          nextCursor,
        );
      };
    }
    case 'rewrap-tokens':
      return async (_admin, _redis, services) => {
        const { tokens, keyring, sealing } = services.connections;
        // Without the API's keys nothing opens: every entry would be reported unreadable, and none rewrapped.
        if (!sealing)
          throw new UsageError('rewrap-tokens needs PORTICO_TOKEN_KEYS: the keys the API uses, the new one first');
        const { rewrapTokens } = await import('../features/connections/index.js');
        const report = await rewrapTokens(tokens, keyring, {
          onBatch: (sofar) => console.error(`portico: rewrap-tokens: ${JSON.stringify(sofar)}`),
        });
        return { key: keyring.current, ...report };
      };
    default:
      throw new UsageError(command ? `unknown admin command "${command}"` : 'an admin command is required');
  }
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      account: { type: 'string' },
      scopes: { type: 'string' },
      'key-id': { type: 'string' },
      app: { type: 'string' },
      status: { type: 'string' },
      grants: { type: 'string' },
      'redirect-uri': { type: 'string', multiple: true },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      'start-database': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [group, command] = positionals;
  if (values.help || group === undefined) {
    console.log(USAGE);
    return group === undefined && !values.help ? 2 : 0;
  }
  if (group === 'serve') {
    await import('../main.js');
    return -1; // the server keeps the process alive
  }
  if (group === 'dispatch') {
    await (await import('./dispatch.js')).runDispatcher();
    return -1; // the dispatcher keeps the process alive
  }
  if (group !== 'admin') throw new UsageError(`unknown command "${group}"`);

  const { 'start-database': startDatabase, ...options } = values;
  const run = planAdmin(command, options as Record<string, string | undefined>);
  // Loaded only now: a usage error or `--help` answers without the service's modules.
  const [{ loadConfig }, { startUp }] = await Promise.all([import('../config.js'), import('../start-up.js')]);
  const config = loadConfig(undefined, undefined, { servesRequests: false });
  // With Redis, running replicas hear about revocations at once; without it their caches expire within 10 s.
  const { connections, services, stop } = await startUp(config, {
    say: (m) => console.error(m),
    startDatabase: startDatabase === true,
  });
  try {
    const result = await run(services.admin, connections.redis !== undefined, services);
    console.log(JSON.stringify(result, null, 2));
    return 0;
  } finally {
    await stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`portico: ${(error as Error).message}\n\n${USAGE}`);
      process.exit(2);
    }
    if (error instanceof AppError) console.error(`portico: ${error.code}: ${error.detail}`);
    // (core/src/infra/devdb.ts, not imported here: a usage error answers without the service's modules)
    else if ((error as Error).name === 'DatabaseNotRunningError') console.error(`portico: ${(error as Error).message}`);
    else console.error('portico:', error);
    process.exit(1);
  },
);
