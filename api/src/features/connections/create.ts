// Portico's connections to health systems, built (docs/connecting.md; docs/architecture.md, "Connections"): the
// client registrations, discovery and the OAuth client (features/smart), the token vault, the connection lifecycle,
// the sync with its worker, and the launch. The composition root calls createConnections once.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { policyFetch } from '#core/net/policy-fetch.js';
import { parseTokenKeys, type Config, type TokenKey } from '../../config.js';
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import type { AppUserDocuments } from '../app-users/index.js';
import type { AppStore } from '../apps/index.js';
import type { AccountStore } from '../accounts/index.js';
import type { AttachmentStore, IngestService } from '../clinical/index.js';
import type { ServedBrands, SessionStore } from '../connect-sessions/index.js';
import type { EventOutbox } from '../events/index.js';
import { loadRegistrations, Registrations, SmartDiscovery, SmartOAuthClient } from '../smart/index.js';
import { LaunchService } from './launch/launch.service.js';
import { ConnectionService } from './lifecycle.js';
import { SyncRunner } from './sync/runner.js';
import { SyncSchedule } from './sync/schedule.js';
import { SyncService } from './sync/service.js';
import { SyncRequests } from './sync/requests.js';
import { SyncRepository } from './sync/store.js';
import { TokenDisposal } from './vault/disposal.js';
import { Keyring } from './vault/keyring.js';
import { TokenVault } from './vault/vault.js';
import { TokenRepository } from './vault/store.js';
import { vaultEntriesGauge } from './vault/rewrap.js';

/** The largest answers read from a health system: discovery and token answers are a few KiB. A page is streamed
 * (never held whole), so its cap only bounds a server that will not stop: 100 resources of 1 MiB and more. */
const MAX_OAUTH_ANSWER_BYTES = 256 * 1024;
const MAX_PAGE_BYTES = 512 * 1024 * 1024;
const SYNC_LEASE_MS = 120_000;
/** How often each replica looks for due syncs (a connection made, or a sync asked for, wakes it at once). */
const SYNC_POLL_MS = 2_000;
/** The sandbox EHR's demo client (sandbox/src: DEMO_CLIENT_ID). */
export const SANDBOX_CLIENT_ID = 'portico-demo';

export interface ConnectionUses {
  /** The app users' documents, which hold their connections, and the transitions that change them. */
  users: Pick<AppUserDocuments, 'store' | 'transitions'>;
  apps: AppStore;
  accounts: AccountStore;
  sessions: SessionStore;
  ingest: IngestService;
  /** Where a sync keeps the attachments it fetches. */
  attachments: AttachmentStore;
  outbox: EventOutbox;
  brands: ServedBrands;
}

export type Connections = Awaited<ReturnType<typeof createConnections>>;

/**
 * Builds the connections, each part from those before it: the SMART client, the token store and its disposal, the
 * lifecycle (which revokes through the disposal and the sync store), the vault (which gives a refused grant up
 * through the lifecycle), the sync and its worker, and the launch.
 */
export async function createConnections(infrastructure: Infrastructure, uses: ConnectionUses) {
  const { config, db, longDb, locks, clock, logger, registry } = infrastructure;
  const configured = config.smart.clientsFile
    ? await loadRegistrations(config.smart.clientsFile)
    : Registrations.none();
  // With the sandbox: its demo public client for brands on this machine (the demo catalog's sandbox brands).
  const registrations = config.smart.sandbox
    ? configured.followedBy({ match: { fhirHost: '127.0.0.1' }, clientId: SANDBOX_CLIENT_ID, auth: { method: 'none' } })
    : configured;
  const keys = config.smart.tokenKeys ?? developmentKeys(config, logger);
  // Without keys nothing is sealed: a key of this process only keeps the keyring whole, and no brand is connectable.
  const keyring = new Keyring(keys ?? [{ kid: 'unused', key: randomBytes(32) }]);
  const { allowInsecure } = config.smart;
  const fetch = policyFetch({ allowInsecure, maxBytes: MAX_OAUTH_ANSWER_BYTES });
  const discovery = new SmartDiscovery(fetch, clock, allowInsecure);
  const oauth = new SmartOAuthClient(fetch, allowInsecure, clock);
  const tokens = new TokenRepository(db, locks);
  const disposal = new TokenDisposal({ store: tokens, keyring, oauth, discovery, registrations });
  const syncStore = new SyncRepository(db, locks);
  await syncStore.init(longDb);
  const lifecycle = new ConnectionService({
    users: uses.users.store,
    transitions: uses.users.transitions,
    outbox: uses.outbox,
    tokens: disposal,
    syncs: syncStore,
    clock,
  });
  const vault = new TokenVault({
    store: tokens,
    keyring,
    oauth,
    discovery,
    registrations,
    clock,
    disposal,
    connections: lifecycle,
  });
  vaultEntriesGauge(registry, tokens, keyring);
  const syncs = new SyncService({
    store: syncStore,
    connections: lifecycle,
    ingest: uses.ingest,
    outbox: uses.outbox,
    pages: {
      fetch: policyFetch({ allowInsecure, maxBytes: MAX_PAGE_BYTES, stream: true }),
      vault,
    },
    tokens: disposal,
    accounts: uses.accounts,
    apps: uses.apps,
    clock,
    intervalMs: config.smart.syncIntervalMs,
    leaseMs: SYNC_LEASE_MS,
    registrations,
    brands: uses.brands,
    attachments: { store: uses.attachments, maxBytes: config.attachments.maxBytes },
  });
  const syncRunner = new SyncRunner(syncStore, syncs, clock, logger, {
    pollMs: SYNC_POLL_MS,
    concurrency: 4,
    leaseMs: SYNC_LEASE_MS,
  });
  const launches = new LaunchService({
    sessions: uses.sessions,
    connections: lifecycle,
    apps: uses.apps,
    brands: uses.brands,
    registrations,
    discovery,
    oauth,
    vault,
    keyring,
    allowInsecure: config.smart.allowInsecure,
    sealing: keys !== undefined,
    syncs: new SyncSchedule(syncStore, syncRunner, clock, logger),
    clock,
  });
  return {
    /** Connections made, renewed, waiting for their patient and revoked; app-users' ConnectionLifecycle. */
    lifecycle,
    launches,
    vault,
    /** Syncs asked for now, and where each stands. */
    syncRequests: new SyncRequests({
      store: syncStore,
      connections: lifecycle,
      accounts: uses.accounts,
      apps: uses.apps,
      clock,
    }),
    syncRunner,
    syncStore,
    keyring,
    /** Whether tokens can be sealed for every replica (token keys given, or the development key). */
    sealing: keys !== undefined,
    tokens,
  };
}

/**
 * Without PORTICO_TOKEN_KEYS, with the embedded database: a development key kept beside its data (so tokens outlive
 * a restart), and the log says so. With a database of its own the deployment must give the keys (the chart requires
 * them): a key of one process would leave every other replica, and this one after a restart, unable to read the
 * tokens, so until they are given no brand is connectable.
 */
function developmentKeys(config: Config, logger: Logger): TokenKey[] | undefined {
  if (config.mongodbUri !== undefined) {
    logger.warn('PORTICO_TOKEN_KEYS is unset: no health system is connectable until it is (docs/connecting.md)');
    return undefined;
  }
  const file = path.join(config.dataDir, 'token-key');
  if (!existsSync(file)) {
    mkdirSync(config.dataDir, { recursive: true });
    writeFileSync(file, `dev:${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  const keys = parseTokenKeys(readFileSync(file, 'utf8').trim());
  if (!keys) throw new Error(`${file} is not a token key (kid:base64 of 32 bytes): delete it to make a new one`);
  logger.warn(
    { file },
    'PORTICO_TOKEN_KEYS is unset: health-system tokens are sealed with a development key kept in the data folder',
  );
  return keys;
}
