// A real Kubernetes API server for the operator's tests: Debian's etcd (scripts/ensure-tools.sh) and kube-apiserver
// built from tools/kube-apiserver into the per-machine tool cache, both on free loopback ports with their state in a
// temporary folder. Started by the first test that asks for it, stopped with the other test services. There is no
// controller-manager, scheduler or kubelet: objects are stored, validated and watched, but nothing reconciles them (no
// pods run, no garbage collection, deleted namespaces stay Terminating). As upstream, a create of a custom object waits
// 2 s while its CRD has been Established for less than 2 s.
import { KubeConfig } from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildGoTool, type GoTool } from '#core/infra/go-tool.js';
import { removeAbandonedDirs } from './abandoned.js';
import { freePort, testToolCache } from './machine.js';
import { until } from './until.js';

const KUBE_APISERVER: GoTool = {
  source: 'kube-apiserver',
  binary: 'portico-kube-apiserver',
  label: 'the test Kubernetes API server',
  buildNote:
    'the first build on this machine compiles kube-apiserver v1.37.2: about 9 minutes on 2 cores, then cached for every clone',
  fallback: 'The Kubernetes tests need Go 1.26+ (tools/kube-apiserver/go.mod).',
};

/** For a `before` hook's this.timeout(): covers a first, uncached kube-apiserver build; starting takes seconds. */
export const KUBERNETES_START_TIMEOUT_MS = 45 * 60_000;

export interface TestKubernetes {
  /** A fresh KubeConfig (the caller may change it) for a cluster admin (group system:masters). */
  kubeconfig: KubeConfig;
  /** https://127.0.0.1:<port> */
  server: string;
  /** The admin's bearer token. */
  token: string;
}

interface Cluster {
  server: string;
  token: string;
  ca: string;
}

/** Temporary folders are named portico-kube-<pid of the test run>-<random>. */
const DIR_PREFIX = 'portico-kube-';

/** One start of the servers: what to stop, and whether it was told to stop while still starting. */
interface Launch {
  stopped: boolean;
  children: ChildProcess[];
  dir?: string;
}

let cluster: Promise<Cluster> | undefined;
let current: Launch | undefined;

/** The run's Kubernetes API server, started on first use. */
export async function testKubernetes(): Promise<TestKubernetes> {
  if (!cluster) {
    current = { stopped: false, children: [] };
    cluster = launch(current);
  }
  const { server, token, ca } = await cluster;
  const kubeconfig = new KubeConfig();
  kubeconfig.loadFromOptions({
    clusters: [{ name: 'portico-test', server, caData: Buffer.from(ca).toString('base64'), skipTLSVerify: false }],
    users: [{ name: 'portico-test-admin', token }],
    contexts: [{ name: 'portico-test', cluster: 'portico-test', user: 'portico-test-admin' }],
    currentContext: 'portico-test',
  });
  return { kubeconfig, server, token };
}

/** Stops kube-apiserver, then etcd, and removes their files; safe when nothing was started. */
export async function stopTestKubernetes(): Promise<void> {
  const run = current;
  cluster = undefined;
  current = undefined;
  if (!run) return;
  run.stopped = true;
  // Newest first: kube-apiserver before the etcd it writes to.
  for (const child of run.children.reverse()) await stop(child);
  if (run.dir) await rm(run.dir, { recursive: true, force: true });
}

async function launch(run: Launch): Promise<Cluster> {
  const binary = await buildGoTool(KUBE_APISERVER, testToolCache(), (message) =>
    process.stderr.write(`  ${message}\n`),
  );
  await removeAbandonedDirs(DIR_PREFIX); // a run killed before its teardown leaves its folder (its servers exit with it)
  const dir = await mkdtemp(path.join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
  run.dir = dir;
  const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];

  const etcdUrl = `http://127.0.0.1:${etcdClient}`;
  const peerUrl = `http://127.0.0.1:${etcdPeer}`;
  const etcd = startWithLog(
    run,
    'etcd',
    path.join(dir, 'etcd.log'),
    etcdCommand(),
    [
      '--name=portico-test',
      `--data-dir=${path.join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=portico-test=${peerUrl}`,
      '--logger=zap',
      '--log-level=warn',
    ],
    true,
  );
  await waitUntil(run, 'etcd', etcd, path.join(dir, 'etcd.log'), 20_000, async () => {
    const response = await fetch(`${etcdUrl}/health`).catch(() => undefined);
    return response?.ok === true && ((await response.json()) as { health?: string }).health === 'true';
  });

  const token = randomBytes(24).toString('hex');
  await writeFile(path.join(dir, 'tokens.csv'), `${token},portico-test-admin,portico-test-admin,"system:masters"\n`, {
    mode: 0o600,
  });
  const serviceAccountKey = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  await writeFile(path.join(dir, 'sa.pub'), serviceAccountKey.publicKey);
  await writeFile(path.join(dir, 'sa.key'), serviceAccountKey.privateKey, { mode: 0o600 });

  const apiserverLog = path.join(dir, 'kube-apiserver.log');
  const apiserver = startWithLog(run, 'kube-apiserver', apiserverLog, binary, [
    '--exit-on-stdin-eof',
    `--etcd-servers=${etcdUrl}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    // No --tls-cert-file: kube-apiserver makes a self-signed CA and serving cert (127.0.0.1, localhost) here.
    `--cert-dir=${path.join(dir, 'pki')}`,
    `--token-auth-file=${path.join(dir, 'tokens.csv')}`,
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${path.join(dir, 'sa.pub')}`,
    `--service-account-signing-key-file=${path.join(dir, 'sa.key')}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    // Nothing here runs the controllers these would wait on: no endpoints for the `kubernetes` service
    // (a loopback address is not a valid endpoint), no default service accounts to admit pods against.
    '--endpoint-reconciler-type=none',
    '--disable-admission-plugins=ServiceAccount',
    '--profiling=false',
  ]);
  const server = `https://127.0.0.1:${apiPort}`;
  await waitUntil(
    run,
    'kube-apiserver',
    apiserver,
    apiserverLog,
    90_000,
    async () => (await readyz(server, token)) === 200,
  );
  const ca = readFileSync(path.join(dir, 'pki', 'apiserver.crt'), 'utf8');
  return { server, token, ca };
}

function etcdCommand(): string {
  return process.env.PORTICO_ETCD ?? 'etcd';
}

/**
 * Spawns the program, in its own process group, with its output in a log file. It must exit when our end
 * of its stdin closes (when we stop it, or when this process dies without a chance to): kube-apiserver
 * does with --exit-on-stdin-eof (tools/kube-apiserver), etcd through a small sh (`guard`) that kills it.
 */
function startWithLog(
  run: Launch,
  label: string,
  logFile: string,
  command: string,
  args: string[],
  guard = false,
): ChildProcess {
  if (run.stopped) throw new Error(`the test Kubernetes API server was stopped before ${label} started`);
  const log = openSync(logFile, 'a');
  const [file, argv] = guard ? ['sh', ['-c', GUARD, label, command, ...args]] : [command, args];
  const child = spawn(file, argv, { stdio: ['pipe', log, log], detached: true });
  closeSync(log);
  child.on('error', () => {}); // a missing program shows as an exit (code -2 or 127) in waitUntil
  run.children.push(child);
  return child;
}

/** Runs "$@" with stdin from /dev/null, kills it when the stdin it was given closes, exits with its status. */
export const GUARD =
  'exec 3<&0; "$@" </dev/null 3<&- & pid=$!; (cat >/dev/null; kill $pid 2>/dev/null) <&3 & exec 3<&-; wait $pid';

/** Closes the child's stdin and waits for it to exit; kills its process group after 10 s. */
function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return Promise.resolve();
  const group = child.pid;
  return new Promise((resolve) => {
    const killer = setTimeout(() => {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // already gone
      }
    }, 10_000);
    child.once('exit', () => {
      clearTimeout(killer);
      resolve();
    });
    child.stdin?.end();
  });
}

async function waitUntil(
  run: Launch,
  label: string,
  child: ChildProcess,
  logFile: string,
  timeoutMs: number,
  ready: () => Promise<boolean>,
): Promise<void> {
  await until(
    `${label} to be ready`,
    async () => {
      if (run.stopped) throw new Error(`the test Kubernetes API server was stopped while ${label} was starting`);
      if (child.exitCode === 127)
        throw new Error(
          `${label} is not installed: run \`bash scripts/ensure-tools.sh\` (Debian: apt-get install etcd-server) or set PORTICO_ETCD to an etcd binary`,
        );
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`${label} exited (${child.exitCode ?? child.signalCode}):\n${tail(logFile)}`);
      return ready();
    },
    { timeoutMs, intervalMs: 200, diagnose: () => tail(logFile) },
  );
}

/** The status of GET /readyz, or 0 when the server does not answer yet (its certificate is not known yet). */
function readyz(server: string, token: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      `${server}/readyz`,
      { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 2000 },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-30).join('\n');
  } catch {
    return '(no log)';
  }
}
