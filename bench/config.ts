// The API settings both benchmark servers run with: in-process state, loopback receivers allowed, files
// for object storage under the temp directory (one folder per process).
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../api/src/config.js';

export function benchConfig(storageName: string): Config {
  return loadConfig({
    // Seeding writes tens of thousands of documents into the embedded database, 32 at a time, on a machine the
    // load generator shares: single operations can outlast the request deadline (2.5 s) there. The measured
    // requests are answered in microseconds either way.
    PORTICO_MONGODB_TIMEOUT_MS: '30000',
    ...process.env,
    LOG_LEVEL: 'warn',
    PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    PORTICO_CURSOR_SECRET: 'bench-cursor-secret-0123456789abcdefghij',
    PORTICO_OBJECT_STORAGE: `file://${path.join(os.tmpdir(), `${storageName}-${process.pid}`)}`,
  });
}
