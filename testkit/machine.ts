// What every service a test starts needs of this machine, apart from the services themselves (./services.ts,
// ./kubernetes.ts, ./s3.ts all use it, so it imports none of them): a free loopback port, and the per-machine tool
// cache the scripts build into.
import { createServer } from 'node:net';
import { toolCacheDir } from '#core/config.js';

/** The per-machine tool cache the test services are built into, where the scripts put theirs. */
export function testToolCache(): string {
  return toolCacheDir(process.env);
}

/** A free loopback TCP port (for servers the tests start). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}
