// The sandbox EHR beside a development API (docs/connecting.md, "Sandbox"): `npm start` runs the repository's
// sandbox (sandbox/src, a program of its own, which the API never imports) as a child process on loopback, with
// its demo client's redirect URIs pointing at this API, and stops it with the API. The demo catalog lists its
// brands, and the API's built-in development registration (connections/create.ts) matches them.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Logger } from 'pino';
import { repoRoot } from '#core/infra/repo-root.js';
import { childEnvironment } from '../../../config.js';
import { CALLBACK_PATH } from './launch.service.js';

/** How long the sandbox may take to say it listens. */
const START_TIMEOUT_MS = 30_000;

export interface RunningSandbox {
  origin: string;
  stop(): Promise<void>;
}

/** Starts the sandbox on `port`, accepting this API's callback at each of `apiOrigins`. */
export async function startSandboxProcess(port: number, apiOrigins: string[], logger: Logger): Promise<RunningSandbox> {
  const child = spawn(process.execPath, [path.join(repoRoot(), 'dist', 'sandbox', 'src', 'main.js')], {
    env: childEnvironment({
      PORT: String(port),
      SANDBOX_REDIRECT_URIS: apiOrigins.map((o) => o + CALLBACK_PATH).join(','),
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const origin = await listening(child);
  child.stdout.on('data', (chunk: Buffer) => logger.debug({ output: chunk.toString().trim() }, 'sandbox EHR'));
  // Ctrl-C reaches the sandbox too (one process group), which then ends on its own with 0.
  child.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM') logger.warn({ code, signal }, 'the sandbox EHR stopped');
  });
  return {
    origin,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Resolves with the origin the sandbox prints once it listens; rejects when it exits or stays silent. */
function listening(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      reject(new Error(`the sandbox EHR did not start within ${START_TIMEOUT_MS / 1000} s: ${output.slice(-2000)}`));
    }, START_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the sandbox EHR exited (${code}) before it listened: ${output.slice(-2000)}`));
    });
  });
}
