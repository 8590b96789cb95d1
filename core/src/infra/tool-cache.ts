// The per-machine tool cache: what is built for development and the tests (the Go programs under
// tools/ here; helm and its friends, Schemathesis and the image's Debian base through the scripts) is built once
// per machine, not once per clone, under <cache>/<tool>/<key>/. scripts/lib/tool-cache.sh is the same protocol
// in bash, and test/core/infra/tool-cache.test.ts checks that both name the same folders.
//
// The key is a hash of everything an entry was built from, so an entry never changes once it is there. It
// appears whole: built in a sibling temporary folder, then renamed into place, while a lock file beside it
// (flock, which the scripts take too) keeps two processes, of one clone or of two, from building it at once.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';

/** The key of an entry's description: 20 hex digits of its SHA-256, as tool_cache_key. */
export function cacheKey(builtFrom: string): string {
  return createHash('sha256').update(builtFrom).digest('hex').slice(0, 20);
}

/**
 * Makes sure `entry` exists, `file` (a path inside it) showing that it does: unless it is there already, takes
 * the entry's lock, looks again (another process may have built it meanwhile), runs `build` with a new folder
 * beside the entry, and renames that folder into place. Leftovers of an interrupted build are removed under
 * the lock. Returns the path of `file`.
 */
export async function ensureCacheEntry(
  entry: string,
  file: string,
  build: (temporary: string) => Promise<void>,
): Promise<string> {
  const target = path.join(entry, file);
  if (existsSync(target)) return target;
  await mkdir(path.dirname(entry), { recursive: true });
  const unlock = await lock(`${entry}.lock`);
  try {
    if (existsSync(target)) return target;
    await removeLeftovers(entry);
    const temporary = `${entry}.tmp.${process.pid}`;
    await mkdir(temporary);
    try {
      await build(temporary);
      await rename(temporary, entry);
    } catch (error) {
      await rm(temporary, { recursive: true, force: true });
      throw error;
    }
    return target;
  } finally {
    await unlock();
  }
}

async function removeLeftovers(entry: string): Promise<void> {
  const dir = path.dirname(entry);
  const prefix = `${path.basename(entry)}.tmp.`;
  const leftovers = (await readdir(dir)).filter((name) => name.startsWith(prefix));
  await Promise.all(
    [entry, ...leftovers.map((name) => path.join(dir, name))].map((folder) =>
      rm(folder, { recursive: true, force: true }),
    ),
  );
}

/**
 * An exclusive flock(2) on the file, the one the scripts' flock(1) takes: Node has no flock, so a `flock` child
 * holds it until its stdin closes, when we unlock or when this process dies. Where util-linux' flock is not
 * installed (macOS), nothing is locked: two builds may then run at once, but the rename still keeps an entry whole.
 */
function lock(file: string): Promise<() => Promise<void>> {
  return new Promise((resolve, reject) => {
    const child = spawn('flock', [file, 'sh', '-c', 'echo locked; exec cat >/dev/null'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const unlock = () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', () => done());
        child.stdin.end();
      });
    child.stdin.on('error', () => {}); // flock gone already: nothing is held
    child.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ENOENT' ? resolve(async () => {}) : reject(error),
    );
    child.once('exit', (code) => reject(new Error(`flock ${file} exited with ${code}`)));
    child.stdout.once('data', () => resolve(unlock));
  });
}
