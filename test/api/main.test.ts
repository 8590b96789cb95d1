// The process as operators run it: started with environment variables, serving, and stopping cleanly on
// SIGTERM while a request is in flight.
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { repoRoot } from '#core/infra/repo-root.js';
import { startEmbeddedDatabase } from '#core/infra/devdb.js';
import { mongoUri, testRedisUrl } from '../../testkit/services.js';
import { freePort, testToolCache } from '../../testkit/machine.js';

function startProcess(env: Record<string, string>): {
  child: ChildProcess;
  output: () => string;
  listening: Promise<void>;
} {
  const child = spawn(process.execPath, [path.join(repoRoot(), 'dist/api/src/main.js')], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listening = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('listening')) resolve();
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)));
  });
  return { child, output: () => output, listening };
}

describe('the API process', () => {
  const database = `t_main_${randomUUID().slice(0, 8)}`;
  after(async () => {
    const client = new MongoClient(mongoUri());
    await client.db(database).dropDatabase();
    await client.close();
  });

  it('serves with MONGODB_URI and REDIS_URL set, and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const { child, output, listening } = startProcess({
      PORT: String(port),
      HOST: '127.0.0.1',
      MONGODB_URI: `${mongoUri()}${database}`,
      REDIS_URL: testRedisUrl(),
      PORTICO_CURSOR_SECRET: 'main-test-cursor-secret-0123456789abcdef',
      LOG_LEVEL: 'info',
    });
    await listening;
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).to.equal(200);
    expect(await ready.json()).to.deep.include({ checks: { mongodb: true, redis: true, catalog: true } });

    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).to.equal(0);
    expect(output()).to.include('stopped');
    expect(output()).to.not.include('embedded database');
  });

  it('publishes and serves the demo catalog when asked (the default with the embedded database)', async () => {
    const port = await freePort();
    const objects = path.join(repoRoot(), '.data', `test-objects-${randomUUID().slice(0, 8)}`);
    const { child, listening } = startProcess({
      PORT: String(port),
      HOST: '127.0.0.1',
      MONGODB_URI: `${mongoUri()}${database}`,
      PORTICO_DEMO_CATALOG: 'true',
      PORTICO_OBJECT_STORAGE: `file://${objects}`,
    });
    try {
      await listening;
      const res = await fetch(`http://127.0.0.1:${port}/api/sdk/v1/catalog/brands?q=lakeside%20health`);
      const body = (await res.json()) as { brands: { name: string; logoUrl: string }[] };
      expect(body.brands[0]!.name).to.equal('Lakeside Health');
      const logo = await fetch(body.brands[0]!.logoUrl);
      expect(logo.status).to.equal(200);
      expect(logo.headers.get('content-type')).to.equal('image/png');
      // Beside the demo brands, the real lists in the repository (offline).
      const real = await fetch(`http://127.0.0.1:${port}/api/sdk/v1/catalog/brands?q=mayo%20clinic`);
      expect(((await real.json()) as { count: number }).count).to.be.greaterThan(0);
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      await rm(objects, { recursive: true, force: true });
    }
  });

  it('refuses to start on an invalid setting, naming it', async () => {
    const { listening } = startProcess({ PORT: 'eighty', MONGODB_URI: `${mongoUri()}${database}` });
    try {
      await listening;
      expect.fail('the process started');
    } catch (error) {
      expect(String(error))
        .to.match(/exited with 1/)
        .and.match(/PORT must be an integer/);
    }
  });

  it('shares an embedded database that is already running instead of starting another', async () => {
    const port = Number(new URL(mongoUri()).port);
    const second = await startEmbeddedDatabase({
      port,
      dataDir: path.join(repoRoot(), '.data'),
      cacheDir: testToolCache(),
    });
    expect(second.owned).to.equal(false);
    expect(second.uri).to.equal(mongoUri());
    await second.stop(); // a no-op for a server this caller did not start
    const client = new MongoClient(mongoUri(), { serverSelectionTimeoutMS: 2000 });
    expect((await client.db('admin').command({ ping: 1 })).ok).to.equal(1);
    await client.close();
  });
});
