// The Helm chart against the real Kubernetes API server the tests start (testkit/kubernetes.ts): strict
// server-side dry runs in a namespace that enforces the restricted Pod Security level, kubeconform against
// schemas generated from that server's OpenAPI document, helm install / upgrade / uninstall (no --wait: no
// kubelet or controllers run there, so nothing would ever become ready), and what the operator's
// ServiceAccount may do.
import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { installBrandCatalogCrd } from '../../testkit/brandcatalog-crd.js';
import {
  CHART_DIR,
  ciValuesFiles,
  helm,
  kubectl,
  mapLimit,
  renderChart,
  run,
  toManifest,
  tool,
  writeKubeconfig,
} from '../../testkit/chart.js';
import { writeKubeconformSchemas } from '../../testkit/kubeconform-schemas.js';
import { KUBERNETES_START_TIMEOUT_MS, testKubernetes } from '../../testkit/kubernetes.js';
import { installUpstreamCrds } from '../../testkit/upstream-crds.js';

const BRANDCATALOG_SERVED = ['catalog.portico.dev/v1alpha1/BrandCatalog'];
const GROUP = 'catalog.portico.dev';
const CRD_NAME = 'brandcatalogs.catalog.portico.dev';

/** A namespace that enforces (and warns and audits at) the restricted Pod Security level. */
async function restrictedNamespace(kubeconfig: KubeConfig, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  const labels = Object.fromEntries(
    ['enforce', 'warn', 'audit'].flatMap((mode) => [
      [`pod-security.kubernetes.io/${mode}`, 'restricted'],
      [`pod-security.kubernetes.io/${mode}-version`, 'latest'],
    ]),
  );
  await kubeconfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name, labels } } });
  return name;
}

/** `kubectl apply --server-side --dry-run=server --validate=strict --warnings-as-errors` of a manifest. */
async function strictDryRun(kubeconfigFile: string, namespace: string, objects: KubernetesObject[]) {
  return kubectl(
    [
      '--kubeconfig',
      kubeconfigFile,
      '--warnings-as-errors',
      'apply',
      '--namespace',
      namespace,
      '--server-side',
      '--force-conflicts',
      '--field-manager=portico-chart-test',
      '--dry-run=server',
      '--validate=strict',
      '--filename=-',
    ],
    { input: toManifest(objects), timeoutMs: 60_000 },
  );
}

describe('chart: against the test Kubernetes API server', function () {
  this.timeout(180_000);
  let kubeconfig: KubeConfig;
  let kubeconfigFile: string;
  let files: string[];

  before(async function () {
    this.timeout(KUBERNETES_START_TIMEOUT_MS); // the first run builds kube-apiserver
    const cluster = await testKubernetes();
    kubeconfig = cluster.kubeconfig;
    [kubeconfigFile, files] = await Promise.all([
      writeKubeconfig(cluster),
      ciValuesFiles(),
      installBrandCatalogCrd(kubeconfig),
      installUpstreamCrds(kubeconfig),
    ]);
  });

  after(async () => {
    if (kubeconfigFile) await rm(path.dirname(kubeconfigFile), { recursive: true, force: true });
  });

  it('admits every ci/ rendering in a restricted namespace: dryRun=All, fieldValidation=Strict, warnings as errors', async () => {
    const namespace = await restrictedNamespace(kubeconfig, 'chart-dry-run');
    const renders = await Promise.all(
      files.map((file, i) =>
        renderChart([file], {}, { release: `dry${i}`, namespace, apiVersions: BRANDCATALOG_SERVED }),
      ),
    );
    const results = await Promise.all(renders.map((objects) => strictDryRun(kubeconfigFile, namespace, objects)));
    results.forEach((result, i) => {
      expect(result.code, `${path.basename(files[i]!)}:\n${result.stderr}${result.stdout}`).to.equal(0);
      const applied = result.stdout.trim().split('\n');
      expect(applied, result.stdout).to.have.length(renders[i]!.length);
      expect(
        applied.every((line) => line.endsWith('serverside-applied (server dry run)')),
        result.stdout,
      ).to.equal(true);
    });
    const kinds = new Set(renders.flat().map((o) => o.kind));
    expect([...kinds].sort()).to.include.members([
      'BrandCatalog',
      'CustomResourceDefinition',
      'Deployment',
      'HTTPRoute',
      'HorizontalPodAutoscaler',
      'Ingress',
      'NetworkPolicy',
      'Pod',
      'PodDisruptionBudget',
      'ServiceMonitor',
    ]);
  });

  it('would be refused there if a pod broke the restricted level or a field were unknown (the checks bite)', async () => {
    const namespace = await restrictedNamespace(kubeconfig, 'chart-refused');
    const minimal = files.find((f) => f.endsWith('minimal-values.yaml'))!;
    const [escalating, unknownField] = await Promise.all([
      renderChart(
        [minimal],
        { 'containerSecurityContext.allowPrivilegeEscalation': 'true' },
        { release: 'esc', namespace },
      ),
      renderChart([minimal], {}, { release: 'unk', namespace }),
    ]);
    const deployment = unknownField.find((o) => o.kind === 'Deployment')! as KubernetesObject & {
      spec: Record<string, unknown>;
    };
    deployment.spec.replica = 2; // not a field of DeploymentSpec
    const [podSecurity, strict] = await Promise.all([
      strictDryRun(
        kubeconfigFile,
        namespace,
        escalating.filter((o) => o.kind === 'Deployment' || o.kind === 'Pod'),
      ),
      strictDryRun(kubeconfigFile, namespace, [deployment]),
    ]);
    expect(podSecurity.code).to.not.equal(0);
    expect(podSecurity.stderr).to.match(/violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false/);
    expect(strict.code).to.not.equal(0);
    expect(strict.stderr).to.match(/\.spec\.replica: field not declared in schema/);
  });

  it("passes kubeconform -strict with schemas generated from the server's OpenAPI v3 document", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'portico-kubeconform-'));
    try {
      const renders = await Promise.all(
        files.map((file) => renderChart([file], {}, { apiVersions: BRANDCATALOG_SERVED })),
      );
      const manifests = await Promise.all(
        renders.map(async (objects, i) => {
          const file = path.join(dir, path.basename(files[i]!).replace('-values', '-rendered'));
          await writeFile(file, toManifest(objects));
          return file;
        }),
      );
      const schemas = path.join(dir, 'schemas');
      const getJson = async (serverPath: string) =>
        JSON.parse((await kubectlOk(['get', '--raw', serverPath])).stdout) as unknown;
      const kinds = renders.flat().map((o) => ({ apiVersion: o.apiVersion!, kind: o.kind! }));
      // negative controls: a Deployment and a BrandCatalog each with a field their schema does not have
      const control = path.join(dir, 'control.yaml');
      const withSpec = (kind: string) =>
        renders.flat().find((o) => o.kind === kind) as KubernetesObject & { spec: Record<string, unknown> };
      const [deployment, catalog] = [withSpec('Deployment'), withSpec('BrandCatalog')];
      await writeFile(
        control,
        toManifest([
          { ...deployment, spec: { ...deployment.spec, replica: 2 } },
          { ...catalog, spec: { ...catalog.spec, refresh: '1h' } },
        ]),
      );
      await writeKubeconformSchemas(getJson, kinds, schemas);
      expect((await readdir(schemas)).sort()).to.include.members([
        'brandcatalog-catalog-v1alpha1.json',
        'deployment-apps-v1.json',
        'service-v1.json',
        'servicemonitor-monitoring-v1.json',
        'httproute-gateway-v1.json',
      ]);
      const kubeconform = (targets: string[]) =>
        run(
          tool('kubeconform'),
          [
            '-strict',
            '-summary',
            '-output',
            'json',
            '-schema-location',
            path.join(schemas, '{{ .ResourceKind }}{{ .KindSuffix }}.json'),
            ...targets,
          ],
          { timeoutMs: 60_000 },
        );
      const [valid, invalid] = await Promise.all([kubeconform(manifests), kubeconform([control])]);
      const summary = JSON.parse(valid.stdout) as {
        summary: { valid: number; invalid: number; errors: number; skipped: number };
      };
      expect(valid.code, valid.stdout + valid.stderr).to.equal(0);
      expect(summary.summary).to.deep.equal({ valid: renders.flat().length, invalid: 0, errors: 0, skipped: 0 });
      expect(invalid.code).to.equal(1);
      const refused = (
        JSON.parse(invalid.stdout) as { resources: { kind: string; status: string; msg: string }[] }
      ).resources.sort((a, b) => a.kind.localeCompare(b.kind));
      expect(refused.map((r) => [r.kind, r.status])).to.deep.equal([
        ['BrandCatalog', 'statusInvalid'],
        ['Deployment', 'statusInvalid'],
      ]);
      expect(refused[0]!.msg).to.match(/additional properties 'refresh' not allowed/);
      expect(refused[1]!.msg).to.match(/additional properties 'replica' not allowed/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe('helm install, upgrade and uninstall (no --wait)', () => {
    let namespace: string;
    const release = 'portico';
    let minimal: string;

    before(async () => {
      namespace = await restrictedNamespace(kubeconfig, 'chart-release');
      minimal = files.find((f) => f.endsWith('minimal-values.yaml'))!;
      // The CRD applied from crds/ (installBrandCatalogCrd, as a user might have done): annotated so that the
      // release adopts it, which is how a cluster moves to the chart's CRD.
      await kubectlOk([
        'annotate',
        '--overwrite',
        'crd',
        CRD_NAME,
        `meta.helm.sh/release-name=${release}`,
        `meta.helm.sh/release-namespace=${namespace}`,
      ]);
      await kubectlOk(['label', '--overwrite', 'crd', CRD_NAME, 'app.kubernetes.io/managed-by=Helm']);
      const installed = await helm(
        ['install', release, CHART_DIR, '--kubeconfig', kubeconfigFile, '--namespace', namespace, '--values', minimal],
        { timeoutMs: 120_000 },
      );
      expect(installed.code, installed.stderr + installed.stdout).to.equal(0);
      expect(installed.stdout)
        .to.match(/STATUS: deployed/)
        .and.to.match(/kubectl get bcat --all-namespaces/);
    });

    after(async () => {
      // The catalogs outlive the release by design; the operator tests' controllers watch every namespace of this
      // API server, so they must not find these. (Deleting the namespace would not delete them: no controllers.)
      if (!namespace) return;
      const objects = kubeconfig.makeApiClient(CustomObjectsApi);
      const { items } = (await objects.listNamespacedCustomObject({
        group: GROUP,
        version: 'v1alpha1',
        namespace,
        plural: 'brandcatalogs',
      })) as { items: KubernetesObject[] };
      await Promise.all(
        items.map((c) =>
          objects.deleteNamespacedCustomObject({
            group: GROUP,
            version: 'v1alpha1',
            namespace,
            plural: 'brandcatalogs',
            name: c.metadata!.name!,
          }),
        ),
      );
    });

    it('installs the API and operator objects and takes over the CRD, kept on uninstall', async () => {
      const apps = kubeconfig.makeApiClient(AppsV1Api);
      const deployments = await apps.listNamespacedDeployment({ namespace });
      expect(deployments.items.map((d) => d.metadata!.name).sort()).to.deep.equal(['portico-api', 'portico-operator']);
      const crd = await kubeconfig.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: CRD_NAME });
      expect(crd.metadata!.annotations).to.include({
        'helm.sh/resource-policy': 'keep',
        'meta.helm.sh/release-name': release,
      });
      expect(crd.metadata!.labels).to.include({
        'app.kubernetes.io/instance': release,
        'helm.sh/chart': 'portico-0.1.0',
      });
    });

    it('admits the helm test pod under the enforced restricted level (it never runs here: no kubelet)', async () => {
      const tested = await helm(
        ['test', release, '--kubeconfig', kubeconfigFile, '--namespace', namespace, '--timeout', '2s'],
        { timeoutMs: 60_000 },
      );
      expect(tested.code).to.not.equal(0); // the pod is created, then never completes
      expect(tested.stderr).to.match(/timed out|context deadline exceeded/);
      const pod = await kubeconfig.makeApiClient(CoreV1Api).readNamespacedPod({ namespace, name: 'portico-test' });
      expect(pod.spec!.containers[0]!.securityContext).to.deep.include({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
      });
    });

    it("lets the operator's ServiceAccount do exactly what the operator calls, and nothing else", async () => {
      const operator = `system:serviceaccount:${namespace}:portico-operator`;
      const api = `system:serviceaccount:${namespace}:portico-api`;
      const lease = 'portico-operator';
      const elsewhere = 'some-team';
      const matrix: [boolean, string, ...string[]][] = [
        [true, operator, 'list', `brandcatalogs.${GROUP}`, '--all-namespaces'],
        [true, operator, 'watch', `brandcatalogs.${GROUP}`, '--all-namespaces'],
        [true, operator, 'patch', `brandcatalogs.${GROUP}/first`, '-n', elsewhere],
        [true, operator, 'patch', `brandcatalogs.${GROUP}/first`, '--subresource=status', '-n', elsewhere],
        [true, operator, 'get', 'configmaps/brand-sources', '-n', elsewhere],
        [true, operator, 'create', 'events', '-n', elsewhere],
        [true, operator, 'get', `leases.coordination.k8s.io/${lease}`, '-n', namespace],
        [true, operator, 'update', `leases.coordination.k8s.io/${lease}`, '-n', namespace],
        [true, operator, 'create', 'leases.coordination.k8s.io', '-n', namespace],
        [false, operator, 'get', 'secrets', '-n', namespace],
        [false, operator, 'list', 'secrets', '--all-namespaces'],
        [false, operator, 'get', 'secrets/portico', '-n', namespace],
        [false, operator, 'watch', 'secrets', '-n', elsewhere],
        [false, operator, 'get', `brandcatalogs.${GROUP}/first`, '-n', elsewhere],
        [false, operator, 'create', `brandcatalogs.${GROUP}`, '-n', elsewhere],
        [false, operator, 'update', `brandcatalogs.${GROUP}/first`, '-n', elsewhere],
        [false, operator, 'delete', `brandcatalogs.${GROUP}/first`, '-n', elsewhere],
        [false, operator, 'update', `brandcatalogs.${GROUP}/first`, '--subresource=status', '-n', elsewhere],
        [false, operator, 'list', 'configmaps', '-n', elsewhere],
        [false, operator, 'watch', 'configmaps', '-n', elsewhere],
        [false, operator, 'update', 'configmaps/brand-sources', '-n', elsewhere],
        [false, operator, 'list', 'events', '-n', elsewhere],
        [false, operator, 'patch', 'events', '-n', elsewhere],
        [false, operator, 'get', 'leases.coordination.k8s.io/another-lease', '-n', namespace],
        [false, operator, 'update', 'leases.coordination.k8s.io/another-lease', '-n', namespace],
        [false, operator, 'delete', `leases.coordination.k8s.io/${lease}`, '-n', namespace],
        [false, operator, 'list', 'leases.coordination.k8s.io', '-n', namespace],
        [false, operator, 'get', `leases.coordination.k8s.io/${lease}`, '-n', elsewhere],
        [false, operator, 'create', 'leases.coordination.k8s.io', '-n', elsewhere],
        [false, operator, 'create', 'pods', '-n', namespace],
        [false, operator, 'update', 'deployments.apps', '-n', namespace],
        [false, operator, 'get', 'customresourcedefinitions.apiextensions.k8s.io'],
        [false, operator, 'create', 'serviceaccounts/portico-api', '--subresource=token', '-n', namespace],
        [false, api, 'get', 'secrets', '-n', namespace],
        [false, api, 'list', `brandcatalogs.${GROUP}`, '--all-namespaces'],
        [false, api, 'get', 'configmaps/brand-sources', '-n', namespace],
        [false, api, 'get', `leases.coordination.k8s.io/${lease}`, '-n', namespace],
      ];
      const answers = await mapLimit(matrix, 8, async ([, as, ...args]) => {
        const result = await kubectl(['--kubeconfig', kubeconfigFile, 'auth', 'can-i', ...args, `--as=${as}`], {
          timeoutMs: 30_000,
        });
        if (result.code !== 0 && result.code !== 1)
          throw new Error(`kubectl auth can-i ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
        return result.code === 0;
      });
      const wrong = matrix
        .filter(([expected], i) => answers[i] !== expected)
        .map(
          ([expected, as, ...args]) => `${as.split(':').pop()} ${args.join(' ')}: expected ${expected ? 'yes' : 'no'}`,
        );
      expect(wrong).to.deep.equal([]);
    });

    it('upgrades with changed values, then uninstalls leaving the CRD and every BrandCatalog', async () => {
      const objects = kubeconfig.makeApiClient(CustomObjectsApi);
      const users = {
        apiVersion: `${GROUP}/v1alpha1`,
        kind: 'BrandCatalog',
        metadata: { name: 'users-own' },
        spec: { sources: [{ name: 'a', format: 'csv', inline: 'name,fhirBaseUrl\nA,https://a.example/fhir\n' }] },
      };
      await objects.createNamespacedCustomObject({
        group: GROUP,
        version: 'v1alpha1',
        namespace,
        plural: 'brandcatalogs',
        body: users,
      });

      const upgraded = await helm(
        [
          'upgrade',
          release,
          CHART_DIR,
          '--kubeconfig',
          kubeconfigFile,
          '--namespace',
          namespace,
          '--values',
          minimal,
          '--set',
          'api.replicas=3',
          '--set',
          'secrets.redisUrl=redis://redis.portico.svc:6379',
          '--set',
          'secrets.cursorSecret=0123456789abcdef0123456789abcdef',
          '--set',
          'catalog.example.enabled=true',
        ],
        { timeoutMs: 120_000 },
      );
      expect(upgraded.code, upgraded.stderr + upgraded.stdout).to.equal(0);
      expect(upgraded.stdout).to.match(/REVISION: 2/);
      const apps = kubeconfig.makeApiClient(AppsV1Api);
      const api = await apps.readNamespacedDeployment({ namespace, name: 'portico-api' });
      expect(api.spec!.replicas).to.equal(3);
      expect(api.spec!.template.spec!.containers[0]!.env!.map((e) => e.name)).to.include.members([
        'REDIS_URL',
        'PORTICO_CURSOR_SECRET',
      ]);
      const pdb = await kubectlOk([
        'get',
        'poddisruptionbudget',
        'portico-api',
        '-n',
        namespace,
        '-o',
        'jsonpath={.spec.maxUnavailable}',
      ]);
      expect(pdb.stdout).to.equal('1');
      const example = (await objects.getNamespacedCustomObject({
        group: GROUP,
        version: 'v1alpha1',
        namespace,
        plural: 'brandcatalogs',
        name: 'default',
      })) as KubernetesObject;
      expect(example.metadata!.annotations).to.include({ 'helm.sh/resource-policy': 'keep' });

      const uninstalled = await helm(['uninstall', release, '--kubeconfig', kubeconfigFile, '--namespace', namespace], {
        timeoutMs: 120_000,
      });
      expect(uninstalled.code, uninstalled.stderr).to.equal(0);
      expect(uninstalled.stdout + uninstalled.stderr).to.match(/kept due to the resource policy/);
      expect((await apps.listNamespacedDeployment({ namespace })).items).to.deep.equal([]);
      const left = await kubectlOk(['get', 'clusterrole', 'portico-operator', '--ignore-not-found', '-o', 'name']);
      expect(left.stdout).to.equal('');
      await kubeconfig.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: CRD_NAME });
      const catalogs = (await objects.listNamespacedCustomObject({
        group: GROUP,
        version: 'v1alpha1',
        namespace,
        plural: 'brandcatalogs',
      })) as { items: KubernetesObject[] };
      expect(catalogs.items.map((c) => c.metadata!.name).sort()).to.deep.equal(['default', 'users-own']);
      const releases = await helm(
        ['list', '--kubeconfig', kubeconfigFile, '--namespace', namespace, '--all', '--short'],
        { timeoutMs: 60_000 },
      );
      expect(releases.stdout.trim()).to.equal('');
    });
  });

  async function kubectlOk(args: string[]) {
    const result = await kubectl(['--kubeconfig', kubeconfigFile, ...args], { timeoutMs: 30_000 });
    if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
    return result;
  }
});
