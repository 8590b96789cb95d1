// The API settings both benchmark servers run with: in-process state, loopback receivers allowed, files
// for object storage under the temp directory (one folder per process).
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../api/src/config.js';

export function benchConfig(storageName: string): Config {
  return loadConfig({
    ...process.env,
    LOG_LEVEL: 'warn',
    PORTICO_WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    PORTICO_CURSOR_SECRET: 'bench-cursor-secret-0123456789abcdefghij',
    PORTICO_OBJECT_STORAGE: `file://${path.join(os.tmpdir(), `${storageName}-${process.pid}`)}`,
  });
}
