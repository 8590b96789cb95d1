// What a sync benchmark stands on: the embedded database, the sandbox EHR in the benchmark's process (so its CPU is
// not the API's), the API as a real process with the Helm chart's settings (testkit/replicas.ts), the sandbox's brand
// published as the operator publishes it, an account with a secret key and an app, and the sign-in that connects a
// patient (link token, initiate, the EHR's sign-in, the callback with the browser's cookie).
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '#core/clock.js';
import { documentLocksFor } from '#core/infra/locks.js';
import { connectMongo } from '#core/infra/mongo.js';
import { openObjectStorage } from '#core/object-storage/index.js';
import { SnapshotStore } from '#core/catalog/snapshots.js';
import { publishCatalog } from '../../operator/src/pipeline/publish.js';
import { startSandboxEhr, type SandboxClient, type SandboxEhr, type SandboxPatient } from '../../sandbox/src/server.js';
import { ADMIN_TOKEN } from '../../testkit/api.js';
import { startPausableDatabase } from '../../testkit/pausable.js';
import { startReplica, whenReady, type Replica } from '../../testkit/replicas.js';
import { sandboxSources } from '../../testkit/sandbox-catalog.js';
import { signIn } from '../../testkit/sandbox-ehr.js';
import { chartHeapMiB } from '../process-stats.js';

const TOKEN_KEYS = `bench:${Buffer.alloc(32, 7).toString('base64')}`;
const RETURN = 'https://app.example.com/connected';
const BRAND = 'bench';

/** The API's Node options: the chart's heap size, as its pods run (BENCH_API_NODE_OPTIONS overrides: `''` for Node's
 * own default). */
export const apiNodeOptions = (): string =>
  process.env.BENCH_API_NODE_OPTIONS ?? `--max-old-space-size=${chartHeapMiB()}`;

export interface SyncBenchWorld {
  api: Replica;
  /** The API's database, for a benchmark that works on it beside the API. */
  mongo: Awaited<ReturnType<typeof connectMongo>>;
  /** PORTICO_TOKEN_KEYS of the API, so another vault can read its tokens. */
  tokenKeys: string;
  ehr: SandboxEhr;
  sk: string;
  app: { id: string; secretKey: string; publishableKey: string };
  call: (method: string, url: string, key: string, body?: unknown) => Promise<Record<string, any>>;
  /** Signs `patient` in for `appUserId`; resolves once the callback was answered (the first sync starts then). */
  connect(patient: string, appUserId: string, beforeCallback?: () => void): Promise<void>;
  close(): Promise<void>;
}

export async function startSyncBenchWorld(options: {
  patients: SandboxPatient[];
  grants: Record<string, unknown>;
  env?: Record<string, string>;
}): Promise<SyncBenchWorld> {
  const database = await startPausableDatabase();
  const name = `bench_sync_${randomUUID().slice(0, 8)}`;
  const clients: SandboxClient[] = [{ clientId: 'portico-bench', redirectUris: [], auth: { method: 'none' } }];
  const ehr = await startSandboxEhr({
    brands: [{ key: BRAND, name: 'Bench Health' }],
    clients,
    patients: options.patients,
  });
  const registrations = path.join(tmpdir(), `${name}-clients.json`);
  writeFileSync(registrations, JSON.stringify([{ match: { fhirHost: '127.0.0.1' }, clientId: 'portico-bench' }]));
  const mongo = await connectMongo(`${database.url}${name}`, name);
  let api: Replica | undefined;
  const close = async () => {
    await api?.stop();
    await mongo.db.dropDatabase().catch(() => {});
    await mongo.close();
    await ehr.close();
    await database.stop();
  };
  try {
    await publishCatalog({
      ref: { namespace: 'default', name: 'default' },
      spec: { rollout: { retainSnapshots: 3, minBrandRatioPercent: 0 } },
      sources: sandboxSources(ehr.origin, [{ key: BRAND, name: 'Bench Health', platformType: 'OTHER' }]),
      store: new SnapshotStore(mongo.db, await documentLocksFor(mongo.db), systemClock),
      storage: openObjectStorage(`file://${path.join(tmpdir(), `portico-bench-objects-${name}`)}`),
    });
    const env = {
      PORTICO_SMART_CLIENTS: registrations,
      PORTICO_SMART_ALLOW_INSECURE: 'true',
      PORTICO_TOKEN_KEYS: TOKEN_KEYS,
      PORTICO_CATALOG_POLL_MS: '200',
      PORTICO_ATTACHMENT_STORAGE: `file://${path.join(tmpdir(), `portico-bench-attachments-${name}`)}`,
      NODE_OPTIONS: apiNodeOptions(),
      ...options.env,
    };
    const started = await startReplica({ name: 'api', mongodbServer: database.url, database: name, redisUrl: '', env });
    api = started;
    await whenReady(started);
    clients[0]!.redirectUris.push(`${started.url}/api/sdk/v1/connect/callback`);
    const call = async (method: string, url: string, key: string, body?: unknown) => {
      const res = await fetch(started.url + url, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      return (await res.json()) as Record<string, any>;
    };
    const account = (await call('POST', '/api/admin/v1/customer-accounts', ADMIN_TOKEN, { name: 'Sync bench' })).id;
    const sk = (
      await call('POST', `/api/admin/v1/customer-accounts/${account}/api-keys`, ADMIN_TOKEN, {
        scopes: ['app_user:read', 'app_user:write'],
      })
    ).key as string;
    const app = await call('POST', `/api/admin/v1/customer-accounts/${account}/apps`, ADMIN_TOKEN, {
      name: 'Bench app',
      grants: options.grants,
      redirectUris: [RETURN],
    });
    let brandId: string | undefined;
    for (let i = 0; i < 100 && !brandId; i++) {
      brandId = (await call('GET', '/api/sdk/v1/catalog/brands?q=bench%20health', ''))['brands']?.[0]?.id;
      if (!brandId) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    if (!brandId) throw new Error('the API never served the bench catalog');
    const connect = async (patient: string, appUserId: string, beforeCallback?: () => void) => {
      // The app's backend mints the link token; its page initiates with it.
      const { linkToken } = await call('POST', '/api/platform/v1/link-tokens', sk, {
        appUserId,
        appId: app.id,
        redirectUri: RETURN,
        brandId,
      });
      const session = await call('POST', '/api/sdk/v1/connect-sessions', app.publishableKey, {
        appUserId,
        brandId,
        redirectUri: RETURN,
        linkToken,
      });
      // The consent page first: its Continue link and cookie carry the patient's answer (launch/consent.ts).
      const consent = await fetch(session.authorizeUrl, { redirect: 'manual' });
      const continueTo = /id="continue" href="([^"]+)"/.exec(await consent.text())?.[1]?.replaceAll('&#38;', '&');
      if (consent.status !== 200 || !continueTo) throw new Error(`no consent page: ${consent.status}`);
      const launched = await fetch(new URL(continueTo, session.authorizeUrl), {
        redirect: 'manual',
        headers: { cookie: consent.headers.getSetCookie()[0]!.split(';')[0]! },
      });
      // The browser's binding cookie goes back with the callback.
      const cookie = launched.headers
        .getSetCookie()
        .map((line) => line.split(';')[0]!)
        .join('; ');
      const callback = await signIn(launched.headers.get('location')!, { username: patient });
      beforeCallback?.();
      const back = await fetch(callback, { redirect: 'manual', headers: { cookie } });
      if (back.status !== 303 || !back.headers.get('location')!.includes('status=connected'))
        throw new Error(`connect failed: ${back.headers.get('location')}`);
    };
    return {
      api: started,
      mongo,
      tokenKeys: TOKEN_KEYS,
      ehr,
      sk,
      app: { id: app.id, secretKey: app.secretKey, publishableKey: app.publishableKey },
      call,
      connect,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
