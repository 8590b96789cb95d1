// What a test run killed before its teardown leaves behind, found by the pid in its name: temporary folders
// named <prefix><pid>-…, runc containers named likewise. The next run removes those whose process is gone.
import { readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Whether a process with this pid exists (EPERM: it does, but belongs to someone else). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid in `<prefix><pid>-…`, or undefined for another name. */
export function ownerOf(name: string, prefix: string): number | undefined {
  const owner = name.startsWith(prefix) ? Number(name.slice(prefix.length).split('-')[0]) : NaN;
  return Number.isInteger(owner) && owner > 0 ? owner : undefined;
}

/** Removes the temporary folders named `<prefix><pid>-…` of runs that are gone. */
export async function removeAbandonedDirs(prefix: string): Promise<void> {
  for (const name of await readdir(tmpdir())) {
    const owner = ownerOf(name, prefix);
    if (owner !== undefined && !isAlive(owner)) await rm(path.join(tmpdir(), name), { recursive: true, force: true });
  }
}
