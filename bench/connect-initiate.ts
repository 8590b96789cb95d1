// Benchmark of the connect initiate (docs/connecting.md, "Link tokens"), `node dist/bench/connect-initiate.js`: what
// starting a patient's sign-in costs the API. The API in this process (embedded database, in-process state) with the
// sandbox EHR as its one connectable brand; BENCH_INITIATE_COUNT (600) initiates, BENCH_INITIATE_CONCURRENCY (4) at
// a time, each for a new app user, in three kinds interleaved in rounds of 20 so that drift hits them alike:
//  - with a redirect URI (a sign-in), with the link token the app's backend minted for it just before (when the
//    build has link tokens; an earlier build has none, and this runs there too, for the comparison);
//  - the mint alone (`POST /link-tokens`);
//  - without a redirect URI (completed by the backend: a path the link tokens do not touch), the control.
// It prints each kind's latency (median, p95) and the process's CPU time per request (user + system, this process
// being both client and server: compare kinds and builds, not absolute figures).
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { createApp } from '../api/src/app.js';
import { buildServices } from '../api/src/wiring.js';
import { systemClock } from '#core/clock.js';
import { startEmbeddedDatabase } from '#core/infra/devdb.js';
import { connectMongo } from '#core/infra/mongo.js';
import { publishCatalog } from '../operator/src/pipeline/publish.js';
import { startSandboxEhr } from '../sandbox/src/server.js';
import { sandboxSources } from '../testkit/sandbox-catalog.js';
import { benchConfig } from './config.js';

const COUNT = Number(process.env.BENCH_INITIATE_COUNT ?? 600);
const CONCURRENCY = Number(process.env.BENCH_INITIATE_CONCURRENCY ?? 4);
const RETURN = 'https://app.example.com/connected';

type Kind = 'sign-in' | 'mint' | 'backend';

async function main(): Promise<void> {
  const ehr = await startSandboxEhr({
    brands: [{ key: 'bench', name: 'Bench Health' }],
    clients: [{ clientId: 'portico-bench', redirectUris: [], auth: { method: 'none' } }],
  });
  const registrations = path.join(tmpdir(), `bench-initiate-${process.pid}.json`);
  writeFileSync(registrations, JSON.stringify([{ match: { fhirHost: '127.0.0.1' }, clientId: 'portico-bench' }]));
  Object.assign(process.env, {
    PORTICO_SMART_CLIENTS: registrations,
    PORTICO_SMART_ALLOW_INSECURE: 'true',
    PORTICO_TOKEN_KEYS: `bench:${Buffer.alloc(32, 7).toString('base64')}`,
    PORTICO_INITIATE_KEY_RATE_LIMIT: '10000/1s',
    PORTICO_SANDBOX: 'false',
  });
  const config = benchConfig('portico-bench-initiate');
  const embedded = await startEmbeddedDatabase({
    port: config.devdbPort,
    dataDir: config.dataDir,
    cacheDir: config.cacheDir,
  });
  const mongo = await connectMongo(embedded.uri, `bench_initiate_${process.pid}`, {
    timeoutMs: config.mongodbTimeoutMs,
    longTimeoutMs: config.mongodbLongTimeoutMs,
  });
  await mongo.db.dropDatabase();
  const services = await buildServices({ config, db: mongo.db, longDb: mongo.longDb, clock: systemClock });
  await publishCatalog({
    ref: config.catalog,
    spec: { rollout: { retainSnapshots: 3, minBrandRatioPercent: 0 } },
    sources: sandboxSources(ehr.origin, [{ key: 'bench', name: 'Bench Health', platformType: 'OTHER' }]),
    store: services.snapshots,
    storage: services.storage,
  });
  await services.activeCatalog.refresh();
  const { handler } = createApp({ config, services, clock: systemClock, logger: pino({ level: 'warn' }) });
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const account = await services.admin.createAccount('Initiate bench');
  const { key: sk } = await services.admin.issueKey(account.id, { scopes: ['app_user:read', 'app_user:write'] });
  const grants = {
    resourceTypes: ['Observation' as const],
    loincCodes: ['*'],
    confidentiality: ['N'],
    sensitivity: [],
    lookbackDays: null,
  };
  const { app, publishableKey } = await services.admin.createApp(account.id, 'Bench app', grants, [RETURN]);
  const found = (await (await fetch(`${base}/api/sdk/v1/catalog/brands?q=bench%20health`)).json()) as {
    brands: { id: string }[];
  };
  const brandId = found.brands[0]!.id;
  const call = async (url: string, key: string, body: unknown) => {
    const res = await fetch(base + url, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const hasLinkTokens =
    (await call('/api/platform/v1/link-tokens', sk, { appUserId: 'probe', appId: app.id, redirectUri: RETURN }))
      .status === 201;

  const mint = async (appUserId: string) => {
    const minted = await call('/api/platform/v1/link-tokens', sk, {
      appUserId,
      appId: app.id,
      redirectUri: RETURN,
      brandId,
    });
    if (minted.status !== 201) throw new Error(`mint: ${minted.status} ${JSON.stringify(minted.body)}`);
    return minted.body['linkToken'] as string;
  };
  const run = async (kind: Kind, appUserId: string, linkToken?: string) => {
    if (kind === 'mint') return mint(appUserId);
    const body = {
      appUserId,
      brandId,
      ...(kind === 'sign-in' && { redirectUri: RETURN, ...(linkToken && { linkToken }) }),
    };
    const res = await call('/api/sdk/v1/connect-sessions', publishableKey, body);
    if (res.status !== 201) throw new Error(`${kind}: ${res.status} ${JSON.stringify(res.body)}`);
    if (kind === 'sign-in' && typeof res.body['authorizeUrl'] !== 'string') throw new Error('no authorizeUrl');
  };
  // Warm up (discovery is cached after its first read; the JIT settles).
  for (let i = 0; i < 20; i++) await run('sign-in', `warm-${i}`, hasLinkTokens ? await mint(`warm-${i}`) : undefined);

  const kinds: Kind[] = hasLinkTokens ? ['sign-in', 'mint', 'backend'] : ['sign-in', 'backend'];
  const samples = new Map<Kind, { ms: number[]; cpuUs: number }>(kinds.map((k) => [k, { ms: [], cpuUs: 0 }]));
  const load = loadavg()[0]!;
  for (let done = 0; done < COUNT; done += 20) {
    for (const kind of kinds) {
      // The sign-in's token is minted before its timing starts: its cost is the mint's row.
      const users = Array.from({ length: 20 }, () => `u-${randomUUID()}`);
      const tokens = kind === 'sign-in' && hasLinkTokens ? await Promise.all(users.map((u) => mint(u))) : [];
      const cpu = process.cpuUsage();
      const sample = samples.get(kind)!;
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          for (let i = next++; i < users.length; i = next++) {
            const started = performance.now();
            await run(kind, users[i]!, tokens[i]);
            sample.ms.push(performance.now() - started);
          }
        }),
      );
      const used = process.cpuUsage(cpu);
      sample.cpuUs += used.user + used.system;
    }
  }
  const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
  console.log(
    `connect initiate, ${COUNT} of each kind, ${CONCURRENCY} at a time (link tokens: ${hasLinkTokens ? 'yes' : 'no, an earlier build'}; load ${load.toFixed(1)} → ${loadavg()[0]!.toFixed(1)})`,
  );
  console.log('| kind | median | p95 | CPU a request (client and server) |');
  console.log('|---|---|---|---|');
  for (const [kind, { ms, cpuUs }] of samples) {
    const sorted = [...ms].sort((a, b) => a - b);
    console.log(
      `| ${kind} | ${pct(sorted, 0.5).toFixed(2)} ms | ${pct(sorted, 0.95).toFixed(2)} ms | ${(cpuUs / ms.length).toFixed(0)} µs |`,
    );
  }
  server.closeAllConnections();
  server.close();
  await services.close();
  await mongo.db.dropDatabase();
  await mongo.close();
  await embedded.stop();
  await ehr.close();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
