// The Helm chart (charts/portico) from tests: rendering it, and running the chart's tools (helm, kubectl,
// kubeconform, helm-docs, helm-unittest: built once per machine into the tool cache by
// scripts/ensure-k8s-tools.sh, which links them into this clone's .tools/bin), each with a
// deadline, against the test Kubernetes API server through a kubeconfig written for them.
import type { KubernetesObject } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { repoRoot } from '#core/infra/repo-root.js';
import type { TestKubernetes } from './kubernetes.js';

export const CHART_DIR = path.join(repoRoot(), 'charts', 'portico');
const TOOLS_BIN = path.join(repoRoot(), '.tools', 'bin');

/** charts/portico/ci/*-values.yaml, absolute, sorted. */
export async function ciValuesFiles(): Promise<string[]> {
  const dir = path.join(CHART_DIR, 'ci');
  return (await readdir(dir))
    .filter((f) => f.endsWith('-values.yaml'))
    .sort()
    .map((f) => path.join(dir, f));
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Killed (SIGKILL) after this long; the result then has code -1 and says so in stderr. Default 60 s. */
  timeoutMs?: number;
  input?: string;
  cwd?: string;
  env?: Record<string, string>;
}

/** Runs a program to its end and returns its exit code and output; never rejects for a non-zero exit. */
export function run(command: string, args: string[], options: RunOptions = {}): Promise<RunResult> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const env = { ...process.env, ...toolEnvironment(), ...options.env };
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd ?? repoRoot(), env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${command}: ${error.message} (run \`bash scripts/ensure-tools.sh\`)`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString('utf8');
      resolve({
        code: timedOut ? -1 : (code ?? -1),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: timedOut
          ? `${stderr}\n${command} ${args.join(' ')}: killed after ${timeoutMs} ms`
          : signal
            ? `${stderr}\n(killed by ${signal})`
            : stderr,
      });
    });
    child.stdin.on('error', () => {}); // a program that exits without reading its input
    child.stdin.end(options.input ?? '');
  });
}

/** Like run, but rejects with the command and its output unless it exits 0. */
export async function runOk(command: string, args: string[], options: RunOptions = {}): Promise<RunResult> {
  const result = await run(command, args, options);
  if (result.code !== 0)
    throw new Error(
      `${path.basename(command)} ${args.join(' ')} exited ${result.code}:\n${result.stderr}${result.stdout}`,
    );
  return result;
}

export const tool = (name: 'helm' | 'kubectl' | 'kubeconform' | 'helm-docs' | 'helm-unittest'): string => {
  const binary = path.join(TOOLS_BIN, name);
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run \`bash scripts/ensure-tools.sh\``);
  return binary;
};

export const helm = (args: string[], options?: RunOptions) => run(tool('helm'), args, options);
export const kubectl = (args: string[], options?: RunOptions) => run(tool('kubectl'), args, options);

let stateDir: string | undefined;

/**
 * The tools' environment: Helm's plugins (helm-unittest) from .tools (a link into the tool cache); Helm's
 * configuration, cache and data and kubectl's discovery cache in a folder of this test run (removed when it exits), so
 * the tests neither read nor write ~/.config/helm or ~/.kube; and no kubeconfig but the one a command names.
 */
function toolEnvironment(): Record<string, string> {
  if (!stateDir) {
    stateDir = mkdtempSync(path.join(tmpdir(), 'portico-chart-tools-'));
    const dir = stateDir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return {
    PATH: `${TOOLS_BIN}${path.delimiter}${process.env.PATH ?? ''}`,
    HELM_PLUGINS: path.join(repoRoot(), '.tools', 'helm-plugins'),
    HELM_CONFIG_HOME: path.join(stateDir, 'helm-config'),
    HELM_CACHE_HOME: path.join(stateDir, 'helm-cache'),
    HELM_DATA_HOME: path.join(stateDir, 'helm-data'),
    KUBECACHEDIR: path.join(stateDir, 'kube-cache'),
    KUBECONFIG: '/dev/null',
  };
}

export interface RenderOptions {
  release?: string;
  namespace?: string;
  /** Extra `--api-versions` (e.g. `catalog.portico.dev/v1alpha1/BrandCatalog`: as when the CRD is served). */
  apiVersions?: string[];
  timeoutMs?: number;
}

/** `helm template` of charts/portico as the arguments for it (values files resolved from the repository root). */
export function templateArgs(
  valuesFiles: string[],
  set: Record<string, string> = {},
  options: RenderOptions = {},
): string[] {
  return [
    'template',
    options.release ?? 'portico',
    CHART_DIR,
    '--namespace',
    options.namespace ?? 'portico',
    ...valuesFiles.flatMap((file) => ['--values', path.resolve(repoRoot(), file)]),
    ...Object.entries(set).flatMap(([key, value]) => ['--set', `${key}=${value}`]),
    ...(options.apiVersions ?? []).flatMap((v) => ['--api-versions', v]),
  ];
}

/**
 * The chart rendered by `helm template` (test hooks included) with these values files and `--set` values, as
 * parsed objects. Rejects with Helm's message when the chart refuses the values.
 */
export async function renderChart(
  valuesFiles: string[],
  set?: Record<string, string>,
  options: RenderOptions = {},
): Promise<KubernetesObject[]> {
  const result = await helm(templateArgs(valuesFiles, set, options), { timeoutMs: options.timeoutMs ?? 60_000 });
  if (result.code !== 0) throw new Error(`helm template exited ${result.code}: ${result.stderr.trim()}`);
  return parseManifests(result.stdout);
}

/**
 * The objects of a multi-document YAML stream (empty documents dropped), read as YAML 1.1 as Kubernetes reads
 * manifests (an unquoted `yes` is a boolean there).
 */
export function parseManifests(text: string): KubernetesObject[] {
  return parseAllDocuments(text, { version: '1.1' })
    .map((document) => {
      if (document.errors.length > 0) throw new Error(`invalid YAML from the chart: ${document.errors[0]!.message}`);
      return document.toJS() as KubernetesObject | null;
    })
    .filter((object): object is KubernetesObject => object !== null && typeof object === 'object');
}

/**
 * Objects as a multi-document stream for kubectl and kubeconform: JSON documents, which every YAML reader
 * takes as written (a YAML 1.2 writer leaves `y` or `on` unquoted, and kubectl's YAML 1.1 reads them as booleans).
 */
export function toManifest(objects: readonly object[]): string {
  return objects.map((object) => `---\n${JSON.stringify(object)}\n`).join('');
}

/** A kubeconfig file (in a fresh temporary folder) for the test API server's admin: server, CA and token. */
export async function writeKubeconfig(cluster: TestKubernetes): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'portico-kubeconfig-'));
  const file = path.join(dir, 'kubeconfig');
  await writeFile(file, cluster.kubeconfig.exportConfig(), { mode: 0o600 });
  return file;
}

/** Runs `work` over `items` with at most `limit` at a time; results in the items' order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  });
  await Promise.all(workers);
  return results;
}
