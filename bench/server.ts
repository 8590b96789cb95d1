// Child process of the benchmarks: a raw node:http hello-world and the real Portico API (embedded database,
// in-process state) side by side in one process, so both get the same CPU. Seeds one tenant, publishes
// the catalog built from every real brand list through the operator's pipeline, and prints what the
// driver needs as one JSON line.
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApp } from '../api/src/app.js';
import { systemClock } from '../core/src/clock.js';
import { loadConfig } from '../api/src/config.js';
import { startEmbeddedDatabase } from '../core/src/infra/devdb.js';
import { connectMongo } from '../core/src/infra/mongo.js';
import { buildServices } from '../api/src/wiring.js';
import { publishCatalog } from '../operator/src/pipeline/publish.js';
import { benchCatalogSources } from './catalog/sources.js';

const ENDPOINTS = 60;

async function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function main(): Promise<void> {
  const config = loadConfig({
    ...process.env,
    LOG_LEVEL: 'warn',
    PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    PORTICO_CURSOR_SECRET: 'bench-cursor-secret-0123456789abcdefghij',
    PORTICO_OBJECT_STORAGE: `file://${path.join(os.tmpdir(), `portico-bench-objects-${process.pid}`)}`,
  });
  const embedded = await startEmbeddedDatabase({ port: config.devdbPort, dataDir: config.dataDir });
  const mongo = await connectMongo(embedded.uri, `bench_${process.pid}`);
  await mongo.db.dropDatabase();
  const services = await buildServices({ config, db: mongo.db, clock: systemClock });
  const { handler } = createApp({ config, services, clock: systemClock, logger: pino({ level: 'warn' }) });

  const account = await services.admin.createAccount('Benchmark Health');
  const { key, id: keyId } = await services.admin.issueKey(account.id, { scopes: ['patient:read', 'patient:write', 'webhook:read', 'webhook:write'] });
  const principal = { keyId, kind: 'sk' as const, accountId: account.id, appId: null, scopes: new Set(['patient:read', 'patient:write', 'webhook:read', 'webhook:write']) };
  const patient = await services.patientService.create(principal, { givenName: 'Ada', familyName: 'Lovelace', birthDate: '1815-12-10', sex: 'female', email: 'ada@example.org' });
  for (let i = 0; i < ENDPOINTS; i++) {
    await services.webhookEndpointService.create(principal, { url: `https://hooks.example.org/portico/${i}`, eventTypes: ['*'] });
  }

  const catalog = await publishCatalog({
    ref: config.catalog,
    spec: { rollout: { retainSnapshots: 2, minBrandRatioPercent: 0 } },
    sources: benchCatalogSources(),
    store: services.snapshots,
    storage: services.storage,
  });
  await services.activeCatalog.refresh();
  const served = services.activeCatalog.get()!;
  const withLogo = served.index.search('examplelabs', { limit: 1 })[0]!;
  const lookup = served.index.search('mercy medical', { limit: 1 })[0]!;

  const raw = await listen((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('hello world');
  });
  const api = await listen(handler);
  process.stdout.write(
    `${JSON.stringify({ raw, api, key, patientId: patient.id, endpoints: ENDPOINTS, brands: catalog.brandCount, logoBrandId: withLogo.id, lookupBrandId: lookup.id })}\n`,
  );

  const stop = async () => {
    await mongo.db.dropDatabase().catch(() => {});
    await services.close();
    await mongo.client.close();
    await embedded.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.stdin.on('end', () => void stop()); // the driver went away
  process.stdin.resume();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
