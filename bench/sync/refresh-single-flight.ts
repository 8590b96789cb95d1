// The refresh single-flight rounds of bench/smart-sync.ts: two token vaults on the same database (two replicas) and
// many callers asking at once for an access token about to expire; how many refreshes reach the EHR (goal: 1) and
// how long the callers waited.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { systemClock } from '#core/clock.js';
import type { connectMongo } from '#core/infra/mongo.js';
import { loadConfig } from '../../api/src/config.js';
import { createConnections } from '../../api/src/features/connections/index.js';
import { openInfrastructure } from '../../api/src/shared/infra/infrastructure.js';
import type { SandboxEhr } from '../../sandbox/src/server.js';

type Mongo = Awaited<ReturnType<typeof connectMongo>>;

export interface SingleFlightOptions {
  mongo: Mongo;
  ehr: SandboxEhr;
  /** PORTICO_TOKEN_KEYS of the API that made the connection, so the vaults can read its tokens. */
  tokenKeys: string;
  /** The connection refreshed, and its patient (as `GET /app-users/{id}` shows them). */
  connection: { id: string; patient: string };
  callers: number;
  rounds: number;
}

/** Prints one line a round: refreshes at the EHR and the callers' waits. */
export async function refreshSingleFlight({
  mongo,
  ehr,
  tokenKeys,
  connection,
  callers,
  rounds,
}: SingleFlightOptions): Promise<void> {
  const tokens = mongo.db.collection<{
    _id: string;
    expiresAt: Date;
    accountId: string;
    brand: { fhirBaseUrl: string };
  }>('connection_tokens');
  const target = await tokens.findOne({ _id: connection.id });
  if (!target) throw new Error(`no tokens for connection ${connection.id}`);
  const vaults = await Promise.all([0, 1].map(() => vaultOn(mongo, tokenKeys)));
  for (let round = 1; round <= rounds; round++) {
    await tokens.updateOne({ _id: target._id }, { $set: { expiresAt: new Date(Date.now() + 1_000) } });
    const before = ehr.stats.tokenRequests.refresh_token;
    const started = performance.now();
    const waits = await Promise.all(
      Array.from({ length: callers }, async (_, i) => {
        // The connection's binding, as the sync states it.
        await vaults[i % 2]!.accessToken(target._id, {
          accountId: target.accountId,
          fhirBaseUrl: target.brand.fhirBaseUrl,
          patient: connection.patient,
        });
        return performance.now() - started;
      }),
    );
    waits.sort((a, b) => a - b);
    console.log(
      `  refresh single-flight, round ${round}: ${callers} callers on two replicas → ${ehr.stats.tokenRequests.refresh_token - before} refresh at the EHR; ` +
        `callers waited ${waits[0]!.toFixed(0)}–${waits[waits.length - 1]!.toFixed(0)} ms (median ${waits[waits.length >> 1]!.toFixed(0)} ms)`,
    );
  }
}

async function vaultOn(mongo: Mongo, tokenKeys: string) {
  const registrations = path.join(tmpdir(), `bench-vault-${randomUUID()}.json`);
  writeFileSync(registrations, JSON.stringify([{ match: { fhirHost: '127.0.0.1' }, clientId: 'portico-bench' }]));
  const config = loadConfig({
    MONGODB_URI: 'mongodb://127.0.0.1/unused',
    PORTICO_TOKEN_KEYS: tokenKeys,
    PORTICO_SMART_CLIENTS: registrations,
    PORTICO_SMART_ALLOW_INSECURE: 'true',
    LOG_LEVEL: 'silent',
  });
  const unused = new Proxy({}, { get: () => () => Promise.reject(new Error('not used by the vault')) });
  const infrastructure = await openInfrastructure({
    config,
    db: mongo.db,
    longDb: mongo.db,
    redis: undefined,
    clock: systemClock,
    logger: pino({ level: 'silent' }),
  });
  const links = await createConnections(infrastructure, {
    users: unused as never,
    apps: unused as never,
    accounts: unused as never,
    sessions: unused as never,
    ingest: unused as never,
    attachments: unused as never,
    outbox: unused as never,
    brands: { brand: () => undefined },
  });
  return links.vault;
}
