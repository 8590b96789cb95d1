// The container image for its tests: built by scripts/build-image.sh (the Debian base and the production
// dependencies are cached once per machine in the tool cache, so a build after the first takes seconds in any
// clone), read from its OCI layout, unpacked once per test run, and run under runc as a kubelet would run the
// chart's pods: read-only root, writable /tmp and /data, every capability dropped, the image's user,
// entrypoint and environment. The containers share the host's network namespace, so they reach the test
// database, Redis and Kubernetes API server on 127.0.0.1. The unpacked root file system is removed with the
// other test services.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isAlive, ownerOf, removeAbandonedDirs } from './abandoned.js';
import { until } from './until.js';
import { promisify } from 'node:util';
import { repoRoot } from '#core/infra/repo-root.js';

const run = promisify(execFile);

/** For a `before` hook's this.timeout(): a first build runs mmdebstrap and npm ci (about two minutes). */
export const IMAGE_BUILD_TIMEOUT_MS = 10 * 60_000;

/** The image config's `config` member (OCI image spec), the parts the tests read. */
export interface ImageConfig {
  User?: string;
  Entrypoint?: string[];
  Cmd?: string[];
  Env?: string[];
  WorkingDir?: string;
  ExposedPorts?: Record<string, object>;
  Labels?: Record<string, string>;
}

export interface BuiltImage {
  /** name:version, as in the docker-archive. */
  name: string;
  /** The OCI manifest's digest. */
  digest: string;
  layout: string;
  /** The OCI tag (package.json's version). */
  tag: string;
  archive: string;
  sizeBytes: number;
  compressedBytes: number;
  /** The whole image config: created, history, rootfs and `config`. */
  imageConfig: { created?: string; history?: { created?: string; created_by?: string }[]; config: ImageConfig };
  /** What scripts/build-image.sh printed. */
  output: string;
}

/**
 * Skips the calling suite when not root: mmdebstrap builds in root mode and runc runs containers as root here
 * (CI runs as root; rootless runc needs user namespaces set up for it).
 */
export function requireRoot(context: Mocha.Context): void {
  if (process.getuid?.() === 0) return;
  process.stderr.write('  the image tests need root (mmdebstrap, runc): skipped\n');
  context.skip();
}

let latest: Promise<BuiltImage> | undefined;

/** The image this run built last, built now if none was. */
export function builtImage(): Promise<BuiltImage> {
  latest ??= buildImage();
  return latest;
}

/** Runs scripts/build-image.sh and reads what it built. */
export function buildImage(): Promise<BuiltImage> {
  latest = build();
  return latest;
}

async function build(): Promise<BuiltImage> {
  const { stdout, stderr } = await run('bash', [path.join(repoRoot(), 'scripts', 'build-image.sh')], {
    cwd: repoRoot(),
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, npm_config_loglevel: 'error' },
  });
  const env = Object.fromEntries(
    (
      await readFile(
        path.join(process.env.PORTICO_IMAGE_DIR ?? path.join(repoRoot(), '.tools', 'image'), 'image.env'),
        'utf8',
      )
    )
      .trim()
      .split('\n')
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const),
  );
  const layout = env.IMAGE_LAYOUT!;
  const manifest = JSON.parse(await readBlob(layout, env.IMAGE_DIGEST!)) as { config: { digest: string } };
  return {
    name: env.IMAGE_NAME!,
    digest: env.IMAGE_DIGEST!,
    layout,
    tag: env.IMAGE_NAME!.split(':')[1]!,
    archive: env.IMAGE_ARCHIVE!,
    sizeBytes: Number(env.IMAGE_SIZE_BYTES),
    compressedBytes: Number(env.IMAGE_COMPRESSED_BYTES),
    imageConfig: JSON.parse(await readBlob(layout, manifest.config.digest)),
    output: stdout + stderr,
  };
}

function readBlob(layout: string, digest: string): Promise<string> {
  return readFile(path.join(layout, 'blobs', 'sha256', digest.replace(/^sha256:/, '')), 'utf8');
}

/** Unpacked root file systems are named portico-image-<pid of the test run>-<random>. */
const DIR_PREFIX = 'portico-image-';
/** Container ids are portico-test-<pid of the test run>-<random>. */
const CONTAINER_PREFIX = 'portico-test-';

interface Unpacked {
  dir: string;
  /** The runtime spec umoci derived from the image config (user, args, env, cwd), the base of every run. */
  spec: RuntimeSpec;
  rootfs: string;
}

let unpacked: Promise<Unpacked> | undefined;
let unpackedDir: string | undefined;

/** The image's root file system and runtime spec, unpacked on first use and shared by the run's containers. */
export function unpackImage(image: BuiltImage): Promise<Unpacked> {
  unpacked ??= (async () => {
    await removeAbandoned();
    const dir = await mkdtemp(path.join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
    unpackedDir = dir;
    const bundle = path.join(dir, 'bundle');
    await run('umoci', ['unpack', '--image', `${image.layout}:${image.tag}`, bundle], { maxBuffer: 16 * 1024 * 1024 });
    const spec = JSON.parse(await readFile(path.join(bundle, 'config.json'), 'utf8')) as RuntimeSpec;
    return { dir, spec, rootfs: path.join(bundle, 'rootfs') };
  })();
  return unpacked;
}

/** Removes the unpacked image (called with the other test services' teardown); safe when nothing was unpacked. */
export async function removeUnpackedImage(): Promise<void> {
  unpacked = undefined;
  if (unpackedDir) await rm(unpackedDir, { recursive: true, force: true });
  unpackedDir = undefined;
}

/** The parts of an OCI runtime spec (config.json) the tests change. */
interface RuntimeSpec {
  process: {
    terminal?: boolean;
    args: string[];
    env: string[];
    capabilities?: Record<string, string[]>;
    noNewPrivileges?: boolean;
    rlimits?: { type: string; hard: number; soft: number }[];
  };
  root: { path: string; readonly?: boolean };
  hostname?: string;
  mounts: { destination: string; type: string; source: string; options?: string[] }[];
  linux: { namespaces: { type: string }[] };
}

export interface ContainerOptions {
  /** Replaces the image's Cmd (as a pod's `args` does); the entrypoint (tini) stays. */
  args?: string[];
  /** Added to the image's environment. */
  env?: Record<string, string>;
  /** Host folder mounted read-write at /data; default a tmpfs owned by the image's user (the chart's emptyDir). */
  data?: string;
  /** Read-only bind mounts: container path → host path. */
  readOnly?: Record<string, string>;
}

export interface Container {
  id: string;
  /** The container's exit code (runc's own when it fails to start one). */
  exited: Promise<number>;
  /** Undefined while it runs. */
  exitCode(): number | undefined;
  /** Everything the container wrote to stdout and stderr so far. */
  logs(): string;
  /** The host pid of the container's first process (tini). */
  pid(): Promise<number>;
  kill(signal: 'TERM' | 'KILL'): Promise<void>;
  /** Kills the container if it still runs and removes it and its bundle. */
  remove(): Promise<void>;
}

/** Starts the image under runc with the chart's security settings and the host's network. */
export async function runContainer(image: BuiltImage, options: ContainerOptions = {}): Promise<Container> {
  const { dir, spec: base, rootfs } = await unpackImage(image);
  const id = `${CONTAINER_PREFIX}${process.pid}-${randomUUID().slice(0, 8)}`;
  const bundle = path.join(dir, id);
  await mkdir(bundle);
  const entrypoint = image.imageConfig.config.Entrypoint ?? [];
  const spec: RuntimeSpec = structuredClone(base);
  spec.process.terminal = false;
  if (options.args) spec.process.args = [...entrypoint, ...options.args];
  spec.process.env = [
    ...spec.process.env.filter((e) => !e.startsWith('TERM=')),
    ...Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`),
  ];
  // The restricted Pod Security Standard: no capabilities, no privilege escalation; a read-only root.
  spec.process.capabilities = { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] };
  spec.process.noNewPrivileges = true;
  spec.process.rlimits = []; // inherited, as under containerd (umoci's default, 1024 open files, is low for a server)
  spec.root = { path: rootfs, readonly: true };
  spec.hostname = id;
  spec.linux.namespaces = spec.linux.namespaces.filter((n) => n.type !== 'network');
  const tmpfs = (destination: string, extra: string[]) => ({
    destination,
    type: 'tmpfs',
    source: 'tmpfs',
    options: ['nosuid', 'nodev', 'size=64m', ...extra],
  });
  spec.mounts.push(tmpfs('/tmp', ['mode=1777']));
  spec.mounts.push(
    options.data
      ? { destination: '/data', type: 'bind', source: options.data, options: ['rbind', 'rw', 'nosuid', 'nodev'] }
      : tmpfs('/data', ['mode=0750', 'uid=10001', 'gid=10001']),
  );
  for (const [destination, source] of Object.entries(options.readOnly ?? {}))
    spec.mounts.push({ destination, type: 'bind', source, options: ['rbind', 'ro', 'nosuid', 'nodev'] });
  await writeFile(path.join(bundle, 'config.json'), JSON.stringify(spec, null, 2));

  let output = '';
  const child: ChildProcess = spawn('runc', ['run', '--bundle', bundle, id], { stdio: ['ignore', 'pipe', 'pipe'] });
  const collect = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-1024 * 1024));
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  let exitCode: number | undefined;
  const exited = new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve((exitCode = code ?? (signal ? 128 : -1))));
  });
  exited.catch(() => {});
  return {
    id,
    exited,
    exitCode: () => exitCode,
    logs: () => output,
    async pid() {
      const { stdout } = await run('runc', ['state', id]);
      return (JSON.parse(stdout) as { pid: number }).pid;
    },
    async kill(signal) {
      await run('runc', ['kill', id, signal]);
    },
    async remove() {
      await run('runc', ['delete', '--force', id]).catch(() => {}); // already gone after a clean exit
      if (child.exitCode === null && child.signalCode === null)
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      await rm(bundle, { recursive: true, force: true });
    },
  };
}

/** A run killed before its teardown leaves its containers and files behind: removed by the next run. */
async function removeAbandoned(): Promise<void> {
  const { stdout } = await run('runc', ['list', '--quiet']).catch(() => ({ stdout: '' }));
  for (const id of stdout.split('\n').filter((line) => line.startsWith(CONTAINER_PREFIX))) {
    const owner = ownerOf(id, CONTAINER_PREFIX);
    if (owner !== undefined && !isAlive(owner)) await run('runc', ['delete', '--force', id]).catch(() => {});
  }
  await removeAbandonedDirs(DIR_PREFIX);
}

/** Waits for `url` to answer 200; fails at once, with the container's output, if the container exits. */
export async function untilServing(container: Container, url: string, ms: number): Promise<void> {
  await until(
    `${url} to answer 200`,
    async () => {
      if (container.exitCode() !== undefined)
        throw new Error(
          `the container exited (${container.exitCode()}) before ${url} answered:\n${container.logs().slice(-4000)}`,
        );
      return (await statusOf(url)) === 200;
    },
    { timeoutMs: ms, intervalMs: 200, diagnose: () => `container output:\n${container.logs().slice(-4000)}` },
  );
}

/** The GET's status, or 0 when nothing answers yet. */
export async function statusOf(url: string): Promise<number> {
  const response = await fetch(url).catch(() => undefined);
  await response?.body?.cancel();
  return response?.status ?? 0;
}
