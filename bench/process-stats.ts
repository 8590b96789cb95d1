// What the benchmarks read of a process and of the Helm chart's values (Linux /proc): CPU time, resident and peak
// memory, and the heap and memory limit the chart gives the API's pods.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '#core/infra/repo-root.js';

/** CPU time (user + system) of a process so far, in milliseconds (Linux). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // USER_HZ = 100
}

/** VmRSS and VmHWM (the peak) of a process, in MiB. */
export function memoryMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)![1]);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** Sets a process's VmHWM back to its RSS now (Linux 4.0+), so the next reading is the peak since; false if refused. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** The heap the Helm chart gives the API's Node (`api.heapMiB`), in MiB: the replica runs with it, as a pod does. */
export function chartHeapMiB(): number {
  const values = parse(readFileSync(path.join(repoRoot(), 'charts/portico/values.yaml'), 'utf8'));
  return Number(values.api.heapMiB);
}

/** The memory limit the Helm chart's values give the API's pods (`api.resources.limits.memory`), in MiB. */
export function chartMemoryLimitMiB(): number {
  const values = parse(readFileSync(path.join(repoRoot(), 'charts/portico/values.yaml'), 'utf8'));
  const quantity = String(values.api.resources.limits.memory);
  const [, amount, unit = ''] = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|k|M|G)?$/.exec(quantity) ?? [];
  const bytes = { '': 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, k: 1e3, M: 1e6, G: 1e9 }[unit];
  if (amount === undefined || bytes === undefined) throw new Error(`unreadable API memory limit "${quantity}"`);
  return (Number(amount) * bytes) / 2 ** 20;
}
