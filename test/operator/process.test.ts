// `portico-operator run` as a cluster runs it: from KUBECONFIG, it leads, publishes, and on SIGTERM releases
// its lease so a successor need not wait the lease out.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { MongoClient } from 'mongodb';
import { repoRoot } from '#core/infra/repo-root.js';
import { GROUP, PLURAL, VERSION } from '../../operator/src/shared/kube.js';
import { installBrandCatalogCrd } from '../../testkit/brandcatalog-crd.js';
import { KUBERNETES_START_TIMEOUT_MS, testKubernetes } from '../../testkit/kubernetes.js';
import { mongoUri } from '../../testkit/services.js';
import { freePort } from '../../testkit/machine.js';
import { until } from '../../testkit/until.js';

describe('operator: the portico-operator run process', function () {
  this.timeout(60_000);
  let kubeconfig: KubeConfig;
  let dir: string;
  const database = `t_operator_${randomUUID().slice(0, 8)}`;

  before(async function () {
    this.timeout(KUBERNETES_START_TIMEOUT_MS);
    ({ kubeconfig } = await testKubernetes());
    await installBrandCatalogCrd(kubeconfig);
    dir = await mkdtemp(path.join(os.tmpdir(), 'portico-operator-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
    const client = await new MongoClient(mongoUri()).connect();
    await client.db(database).dropDatabase();
    await client.close();
  });

  it('publishes a BrandCatalog, then shuts down cleanly and releases the lease', async () => {
    const namespace = `op-${randomUUID().slice(0, 8)}`;
    await kubeconfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    const file = path.join(dir, 'kubeconfig');
    await writeFile(file, kubeconfig.exportConfig());
    const port = await freePort();
    const child = spawn(process.execPath, [path.join(repoRoot(), 'bin/portico-operator.js'), 'run'], {
      env: {
        PATH: process.env.PATH ?? '',
        KUBECONFIG: file,
        PORTICO_OPERATOR_HOST: '127.0.0.1',
        PORTICO_OPERATOR_PORT: String(port),
        MONGODB_URI: `${mongoUri()}${database}`,
        PORTICO_OBJECT_STORAGE: `file://${dir}/objects`,
        POD_NAMESPACE: namespace,
        POD_NAME: 'operator-0',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const custom = kubeconfig.makeApiClient(CustomObjectsApi);
      await custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace,
        body: {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'BrandCatalog',
          metadata: { name: 'brands', namespace },
          spec: {
            sources: [
              {
                name: 'list',
                format: 'csv',
                inline: 'name,fhirBaseUrl,state\nProcess Clinic,https://fhir.process.example/r4,VT\n',
              },
            ],
          },
        },
      });
      const object = await until(
        'the BrandCatalog to be Ready',
        async () => {
          const current = (await custom.getNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            plural: PLURAL,
            namespace,
            name: 'brands',
          })) as { status?: { brandCount?: number; conditions?: { type: string; status: string }[] } };
          return current.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && current;
        },
        { timeoutMs: 30_000, intervalMs: 100, diagnose: () => `operator output:\n${output}` },
      );
      expect(object.status?.brandCount).to.equal(1);
      const lease = await kubeconfig
        .makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ namespace, name: 'portico-catalog-operator' });
      expect(lease.spec?.holderIdentity).to.equal('operator-0');
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).to.equal(200);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).to.equal(200);
      expect(await ready.json()).to.deep.equal({ status: 'ready', checks: { kubernetes: true, database: true } });
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(
        Number(/^portico_operator_reconciles_total\{result="succeeded"\} (\d+)/m.exec(metrics)?.[1]),
      ).to.be.greaterThan(0);
      expect(metrics).to.match(/^portico_operator_leader 1$/m);
      expect(metrics).to.match(/^portico_operator_queue_depth 0$/m);
      expect(metrics).to.include(`portico_operator_brands_published{catalog="${namespace}/brands"} 1`);
      expect(metrics).to.match(/^portico_operator_logos_total\{outcome="failed"\} \d+$/m);
      expect(metrics).to.match(/^portico_operator_reconcile_duration_seconds_count [1-9]/m);
      expect(metrics).to.match(/^# TYPE portico_operator_event_write_failures_total counter$/m);
      expect(metrics).to.match(/^process_cpu_seconds_total /m);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, output).to.equal(0);
    const released = await kubeconfig
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace, name: 'portico-catalog-operator' });
    expect(released.spec?.holderIdentity ?? null).to.equal(null);
  });
});
