// The operator from the image, as the chart runs it in a cluster: under runc with a read-only root, the
// in-cluster environment (KUBERNETES_SERVICE_HOST/PORT, a ServiceAccount token minted by the API server's
// TokenRequest API with its CA and namespace mounted where client libraries look) and exactly the chart's
// RBAC for its ServiceAccount. It must lead, reconcile a BrandCatalog of real brand lists to Ready, record
// an Event, never be refused (403), and hand the Lease back when stopped.
//
// Sources are ConfigMaps: an https source on a loopback server cannot be used, as the operator fetches
// only https from public addresses (core/src/net/address-policy.ts), on purpose.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { MongoClient } from 'mongodb';
import { GROUP, PLURAL, VERSION, type BrandCatalogObject } from '../../operator/src/shared/kube.js';
import { brandFile } from '../../testkit/brand-data.js';
import { installBrandCatalogCrd } from '../../testkit/brandcatalog-crd.js';
import { renderChart } from '../../testkit/chart.js';
import {
  builtImage,
  IMAGE_BUILD_TIMEOUT_MS,
  requireRoot,
  runContainer,
  untilServing,
  type BuiltImage,
  type Container,
} from '../../testkit/image.js';
import { KUBERNETES_START_TIMEOUT_MS, testKubernetes } from '../../testkit/kubernetes.js';
import { mongoUri, testRedisUrl } from '../../testkit/services.js';
import { freePort } from '../../testkit/machine.js';
import { until } from '../../testkit/until.js';

/** The chart's values for a minimal install (charts/portico/ci/). */
const VALUES = ['charts/portico/ci/minimal-values.yaml'];
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const RBAC_KINDS = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
/** How a refused call shows in the operator's log (the client's ApiException, the API server's Status). */
const REFUSED = /HTTP-Code: 403|forbidden/i;

type RbacObject = KubernetesObject & {
  subjects?: { kind: string; name: string; namespace?: string }[];
  roleRef?: { kind: string; name: string };
  rules?: { resources?: string[]; resourceNames?: string[] }[];
};

/** The Lease the chart's Role lets the operator update (the chart sets PORTICO_OPERATOR_LEASE to it). */
function leaseOf(rbac: RbacObject[]): string {
  const name = rbac
    .find((o) => o.kind === 'Role')
    ?.rules?.find((r) => r.resources?.includes('leases') && r.resourceNames?.length)?.resourceNames?.[0];
  if (!name) throw new Error("the chart's operator Role names no Lease");
  return name;
}

/**
 * The operator's identity and RBAC from the chart, moved into `namespace` (the chart renders for its release
 * namespace) with cluster-wide names made unique, so that this test and the chart's own install test never
 * share an object.
 */
function retarget(objects: KubernetesObject[], namespace: string, suffix: string): RbacObject[] {
  return objects
    .filter((o) => RBAC_KINDS.includes(o.kind!) && o.metadata?.labels?.['app.kubernetes.io/component'] === 'operator')
    .map((o) => {
      const copy = structuredClone(o) as RbacObject;
      if (copy.kind!.startsWith('Cluster')) copy.metadata!.name = `${copy.metadata!.name}-${suffix}`;
      else copy.metadata!.namespace = namespace;
      if (copy.roleRef?.kind === 'ClusterRole') copy.roleRef.name = `${copy.roleRef.name}-${suffix}`;
      for (const subject of copy.subjects ?? []) if (subject.kind === 'ServiceAccount') subject.namespace = namespace;
      return copy;
    });
}

describe('image: the operator from the image, in-cluster with the chart RBAC, under runc', function () {
  this.timeout(120_000);
  const suffix = randomUUID().slice(0, 8);
  const namespace = `t-img-${suffix}`;
  const database = `t_image_operator_${suffix}`;
  let image: BuiltImage;
  let kubeconfig: KubeConfig;
  let server: string;
  let rbac: RbacObject[] = [];
  let secrets: string;
  let container: Container | undefined;

  before(async function () {
    this.timeout(IMAGE_BUILD_TIMEOUT_MS + KUBERNETES_START_TIMEOUT_MS); // first runs build the image and kube-apiserver
    requireRoot(this);
    image = await builtImage();
    ({ kubeconfig, server } = await testKubernetes());
    await installBrandCatalogCrd(kubeconfig);
    const core = kubeconfig.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    rbac = retarget(await renderChart(VALUES), namespace, suffix);
    expect(rbac.map((o) => o.kind).sort()).to.deep.equal([...RBAC_KINDS].sort());
    const objects = KubernetesObjectApi.makeApiClient(kubeconfig);
    for (const object of rbac) await objects.create(object);

    // What the kubelet mounts for the pod: a bound token, the cluster's CA and the namespace.
    const serviceAccount = rbac.find((o) => o.kind === 'ServiceAccount')!.metadata!.name!;
    const request = await core.createNamespacedServiceAccountToken({
      name: serviceAccount,
      namespace,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    secrets = await mkdtemp(path.join(tmpdir(), 'portico-image-sa-'));
    await chmod(secrets, 0o755); // readable by the image's user, as the kubelet's projected volume is
    await writeFile(path.join(secrets, 'token'), request.status!.token, { mode: 0o644 });
    await writeFile(path.join(secrets, 'ca.crt'), Buffer.from(kubeconfig.getCurrentCluster()!.caData!, 'base64'), {
      mode: 0o644,
    });
    await writeFile(path.join(secrets, 'namespace'), namespace, { mode: 0o644 });

    for (const [name, file] of [
      ['epic-r4', 'epic-legacy-2022/epic_endpoints_r4.json'],
      ['hl7-example', 'smart-app-launch-examples/Bundle-example1.json'],
    ] as const) {
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name }, data: { 'bundle.json': brandFile(file) } },
      });
    }
  });

  after(async () => {
    await container?.remove();
    if (kubeconfig) {
      const objects = KubernetesObjectApi.makeApiClient(kubeconfig);
      for (const object of rbac.filter((o) => o.kind!.startsWith('Cluster')))
        await objects.delete(object).catch(() => {});
    }
    if (secrets) await rm(secrets, { recursive: true, force: true });
    const client = await new MongoClient(mongoUri()).connect();
    await client.db(database).dropDatabase();
    await client.close();
  });

  it('leads, reconciles a BrandCatalog of real lists to Ready, records an Event, is never refused, and releases the Lease on SIGTERM', async () => {
    const port = await freePort();
    const pod = `portico-operator-${suffix}`;
    container = await runContainer(image, {
      args: ['node', '/app/bin/portico-operator.js', 'run'],
      env: {
        KUBERNETES_SERVICE_HOST: '127.0.0.1',
        KUBERNETES_SERVICE_PORT: new URL(server).port,
        POD_NAMESPACE: namespace,
        POD_NAME: pod,
        MONGODB_URI: `${mongoUri()}${database}`,
        REDIS_URL: testRedisUrl(),
        PORTICO_OBJECT_STORAGE: 'file:///data/objects',
        PORTICO_CATALOG: `${namespace}/brands`,
        PORTICO_OPERATOR_PORT: String(port),
        PORTICO_OPERATOR_LEASE: leaseOf(rbac),
      },
      readOnly: { [SERVICE_ACCOUNT_DIR]: secrets },
    });
    const started = container;
    const logs = () => `container output:\n${started.logs().slice(-4000)}`;
    /** Stops a wait at the first refused call, naming it, rather than timing out. */
    const notRefused = () => {
      const line = started
        .logs()
        .split('\n')
        .find((l) => REFUSED.test(l));
      if (line) throw new Error(`the operator was refused a call with the chart's RBAC:\n${line.slice(0, 2000)}`);
    };
    await untilServing(started, `http://127.0.0.1:${port}/readyz`, 30_000);

    const coordination = kubeconfig.makeApiClient(CoordinationV1Api);
    const holder = async () =>
      (await coordination.readNamespacedLease({ namespace, name: leaseOf(rbac) }).catch(() => undefined))?.spec
        ?.holderIdentity;
    await until(
      'the operator to hold the Lease',
      async () => {
        notRefused();
        return (await holder()) === pod;
      },
      { timeoutMs: 30_000, intervalMs: 200, diagnose: logs },
    );

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
              name: 'epic',
              format: 'fhir-endpoint-bundle',
              configMapRef: { name: 'epic-r4', key: 'bundle.json' },
              platformType: 'EPIC',
              priority: 20,
            },
            {
              name: 'hl7',
              format: 'smart-brands-bundle',
              configMapRef: { name: 'hl7-example', key: 'bundle.json' },
              priority: 10,
            },
          ],
          logos: { faviconFallback: false }, // no network here: the HL7 brand's data: logo is rendered (by sharp, in the image)
          rollout: { minBrandRatioPercent: 0 },
        },
      },
    });
    const ready = await until(
      'the BrandCatalog to be Ready',
      async () => {
        notRefused();
        const object = (await custom.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          plural: PLURAL,
          namespace,
          name: 'brands',
        })) as BrandCatalogObject;
        const conditions = (object.status?.conditions ?? []) as { type: string; status: string }[];
        return conditions.some((c) => c.type === 'Ready' && c.status === 'True') && object;
      },
      { timeoutMs: 60_000, intervalMs: 200, diagnose: logs },
    );
    const status = ready.status as { brandCount: number; logos: { rendered: number }; observedGeneration: number };
    expect(status.brandCount).to.equal(304 + 1);
    expect(status.logos.rendered).to.be.at.least(1);
    expect(status.observedGeneration).to.equal(ready.metadata.generation);

    const core = kubeconfig.makeApiClient(CoreV1Api);
    const published = async () =>
      (await core.listNamespacedEvent({ namespace })).items.some(
        (e) => e.involvedObject.name === 'brands' && e.reason === 'Published',
      );
    await until(
      'a Published Event',
      async () => {
        notRefused();
        return published();
      },
      { timeoutMs: 20_000, intervalMs: 200, diagnose: logs },
    );

    await started.kill('TERM');
    const code = await Promise.race([
      started.exited,
      new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 15_000)),
    ]);
    expect(code, logs()).to.equal(0);
    expect(await holder(), 'the Lease is handed back').to.equal(undefined);
    notRefused();
  });
});
