// Child process of the webhook benchmark: the real API with its dispatcher (embedded database, in-process state,
// private destinations allowed so receivers can be on loopback), serving HTTP. Prints one JSON line (its URL), then
// answers the driver over IPC: `cpu` → process.cpuUsage(), `{tenant: scopes}` → a new account and key, `{emit,
// accountId}` → commits that many events through the outbox as fast as it can, as requests would, without the requests'
// cost.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApp } from '../api/src/app.js';
import { benchConfig } from './config.js';
import { buildServices } from '../api/src/wiring.js';
import { systemClock } from '#core/clock.js';
import { startEmbeddedDatabase } from '#core/infra/devdb.js';
import { connectMongo } from '#core/infra/mongo.js';

async function main(): Promise<void> {
  const config = benchConfig('portico-bench-webhooks');
  const embedded = await startEmbeddedDatabase({
    port: config.devdbPort,
    dataDir: config.dataDir,
    cacheDir: config.cacheDir,
  });
  const mongo = await connectMongo(
    embedded.uri,
    `bench_webhooks_${process.pid}`,
    { timeoutMs: config.mongodbTimeoutMs, longTimeoutMs: config.mongodbLongTimeoutMs },
    { monitorCommands: true },
  );
  // Database commands by name and collection, with their time: what a delivery costs the database.
  const commands = new Map<string, { count: number; ms: number }>();
  const started = new Map<number, string>();
  // Both clients: requests use one, the dispatcher the other (the deadline of long operations).
  for (const client of [mongo.client, mongo.longDb.client]) {
    client.on('commandStarted', (event) =>
      started.set(event.requestId, `${event.commandName} ${String(event.command[event.commandName])}`),
    );
    client.on('commandSucceeded', (event) => {
      const key = started.get(event.requestId) ?? event.commandName;
      started.delete(event.requestId);
      const entry = commands.get(key) ?? { count: 0, ms: 0 };
      entry.count++;
      entry.ms += event.duration;
      commands.set(key, entry);
    });
  }
  await mongo.db.dropDatabase();
  const logger = pino({ level: 'warn' });
  const services = await buildServices({ config, db: mongo.db, longDb: mongo.longDb, clock: systemClock, logger });
  await services.dispatcher.start();
  const { handler } = createApp({ config, services, clock: systemClock, logger });
  const server = createServer(handler);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`${JSON.stringify({ api: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);

  process.on('message', (message: unknown) => {
    if (message === 'cpu') return process.send!(process.cpuUsage());
    if (message === 'commands') return process.send!({ commands: Object.fromEntries(commands) });
    if (typeof message === 'object' && message !== null && 'tenant' in message) {
      const { tenant } = message as { tenant: string[] };
      void (async () => {
        const account = await services.admin.createAccount(`Bench ${randomUUID()}`);
        const { key } = await services.admin.issueKey(account.id, { scopes: tenant as never });
        process.send!({ accountId: account.id, key });
      })();
      return;
    }
    const { emit, accountId } = message as { emit: number; accountId: string };
    void (async () => {
      for (let i = 0; i < emit; i += 50) {
        const batch = Array.from({ length: Math.min(50, emit - i) }, () => {
          const patientId = randomUUID();
          return services.outbox.event('patient.created', accountId, `patient:${patientId}`, { patientId });
        });
        await services.outbox.append(batch);
      }
      process.send!({ emitted: emit });
    })();
  });

  const stop = async () => {
    await services.close();
    await mongo.db.dropDatabase().catch(() => {});
    await mongo.close();
    await embedded.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('disconnect', () => void stop());
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
