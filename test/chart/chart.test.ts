// The Helm chart on its own: lint, the helm-unittest suites, its README as helm-docs makes it, the CRD it
// renders against crds/, and what every rendering of the ci/ values files must hold.
import type { KubernetesObject } from '@kubernetes/client-node';
import { expect } from 'chai';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from '#core/infra/repo-root.js';
import { loadConfig } from '../../api/src/config.js';
import { loadOperatorConfig } from '../../operator/src/config.js';
import { CRD_FILE } from '../../operator/src/crd/generate.js';
import { chartCrdTemplate, chartCrdTemplatePath } from '../../operator/src/crd/chart-template.js';
import { CHART_DIR, ciValuesFiles, helm, renderChart, run, templateArgs, tool } from '../../testkit/chart.js';

const BRANDCATALOG_SERVED = ['catalog.portico.dev/v1alpha1/BrandCatalog'];
type Labelled = KubernetesObject & { spec?: Record<string, unknown> };

/** Every label selector in an object, with where it is. */
function selectorsOf(object: Labelled): [string, Record<string, string>][] {
  const spec = (object.spec ?? {}) as Record<string, any>;
  const found: [string, Record<string, string> | undefined][] = [
    ['spec.selector.matchLabels', spec.selector?.matchLabels],
    ['spec.podSelector.matchLabels', spec.podSelector?.matchLabels],
    ...((spec.template?.spec?.topologySpreadConstraints ?? []) as any[]).map(
      (c, i): [string, Record<string, string>] => [`topologySpreadConstraints[${i}]`, c.labelSelector?.matchLabels],
    ),
  ];
  if (object.kind === 'Service') found.push(['spec.selector', spec.selector]);
  return found.filter((entry): entry is [string, Record<string, string>] => entry[1] !== undefined);
}

describe('chart: charts/portico', function () {
  this.timeout(120_000);
  let files: string[];
  let rendered: Map<string, Labelled[]>;

  before(async () => {
    files = await ciValuesFiles();
    const renders = await Promise.all(
      files.map((file) => renderChart([file], {}, { apiVersions: BRANDCATALOG_SERVED })),
    );
    rendered = new Map(files.map((file, i) => [path.basename(file), renders[i]! as Labelled[]]));
  });

  it('has the four ci/ values files the issue asks for', () => {
    expect([...rendered.keys()]).to.deep.equal([
      'existing-secret-values.yaml',
      'minimal-values.yaml',
      'production-values.yaml',
      's3-values.yaml',
    ]);
  });

  it('passes `helm lint --strict` with every ci/ values file, with no refusal hidden as [INFO] Fail', async () => {
    const results = await Promise.all(
      files.map((file) => helm(['lint', '--strict', CHART_DIR, '--values', file], { timeoutMs: 60_000 })),
    );
    results.forEach((result, i) => {
      const output = result.stdout + result.stderr;
      expect(result.code, `${files[i]}:\n${output}`).to.equal(0);
      expect(output, files[i]).to.match(/1 chart\(s\) linted, 0 chart\(s\) failed/);
      // helm lint reports a template's `fail` as [INFO]: it must not appear.
      expect(output, files[i]).not.to.match(/\[(WARNING|ERROR)\]|Fail:/);
    });
  });

  it('sets, in every ci/ rendering, only variables the programs read, which their config loaders accept', async () => {
    type EnvVar = {
      name: string;
      value?: string;
      valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
    };
    type Container = { name: string; args?: string[]; env?: EnvVar[] };
    // What a referenced Secret key would hold, when the chart does not create the Secret itself.
    const plausible: Record<string, string> = {
      MONGODB_URI: 'mongodb://mongo:27017/portico',
      REDIS_URL: 'redis://redis:6379',
      PORTICO_CURSOR_SECRET: 'c'.repeat(40),
      PORTICO_ADMIN_TOKEN: 'a'.repeat(24),
      AWS_ACCESS_KEY_ID: 'key',
      AWS_SECRET_ACCESS_KEY: 'secret',
      PORTICO_TOKEN_KEYS: `k1:${Buffer.alloc(32).toString('base64')}`,
    };
    const sources = (
      await Promise.all(
        ['api/src/config.ts', 'core/src/config.ts', 'operator/src/config.ts'].map((file) =>
          readFile(path.join(repoRoot(), file), 'utf8'),
        ),
      )
    ).join('\n');
    for (const [file, objects] of rendered) {
      const secrets = new Map(
        objects
          .filter((o) => o.kind === 'Secret')
          .map((o) => [o.metadata!.name!, (o as { stringData?: Record<string, string> }).stringData ?? {}]),
      );
      for (const deployment of objects.filter((o) => o.kind === 'Deployment')) {
        const component = deployment.metadata!.labels!['app.kubernetes.io/component'];
        const [container] = (deployment as { spec: { template: { spec: { containers: Container[] } } } }).spec.template
          .spec.containers;
        const env: Record<string, string> = {};
        for (const variable of container!.env ?? []) {
          const ref = variable.valueFrom?.secretKeyRef;
          const field = variable.valueFrom?.fieldRef?.fieldPath;
          env[variable.name] =
            variable.value ??
            (ref
              ? (secrets.get(ref.name)?.[ref.key] ?? plausible[variable.name] ?? 'x')
              : field === 'metadata.namespace'
                ? 'portico'
                : 'portico-0');
          // A renamed setting must fail here: AWS_* are read by the S3 client's default chain.
          if (!variable.name.startsWith('AWS_'))
            expect(sources, `${file}: ${component} sets ${variable.name}, which no config module reads`).to.include(
              `'${variable.name}'`,
            );
        }
        if (component === 'api') {
          // The heap sized for the pod (api.heapMiB), not for the machine.
          const [node, heap, ...rest] = container!.args ?? [];
          expect([node, ...rest], file).to.deep.equal(['node', '/app/bin/portico.js', 'serve']);
          expect(heap, file).to.match(/^--max-old-space-size=\d+$/);
          expect(() => loadConfig(env), `${file}: the API refuses its environment`).not.to.throw();
        } else {
          expect(component, file).to.equal('operator');
          expect(container!.args, file).to.deep.equal(['node', '/app/bin/portico-operator.js', 'run']);
          expect(() => loadOperatorConfig(env), `${file}: the operator refuses its environment`).not.to.throw();
        }
      }
    }
  });

  it('passes its helm-unittest suites (charts/portico/tests)', async () => {
    const result = await helm(['unittest', '--color=false', CHART_DIR], { timeoutMs: 120_000 });
    const output = result.stdout + result.stderr;
    if (result.code !== 0) expect.fail(`helm unittest failed:\n${output}`);
    const [, passed, total] = /Tests:\s+(\d+) passed, (\d+) total/.exec(output) ?? [];
    expect(Number(total), output).to.be.greaterThan(50);
    expect(passed).to.equal(total);
  });

  it('has the README that helm-docs generates from values.yaml and README.md.gotmpl', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'portico-helm-docs-'));
    try {
      const copy = path.join(dir, 'portico');
      await cp(CHART_DIR, copy, { recursive: true });
      const result = await run(tool('helm-docs'), ['--chart-search-root', copy, '--sort-values-order', 'file'], {
        timeoutMs: 60_000,
      });
      expect(result.code, result.stderr).to.equal(0);
      const [committed, generated] = await Promise.all([
        readFile(path.join(CHART_DIR, 'README.md'), 'utf8'),
        readFile(path.join(copy, 'README.md'), 'utf8'),
      ]);
      expect(
        committed,
        'charts/portico/README.md is stale: run `.tools/bin/helm-docs --chart-search-root charts/portico --sort-values-order file`',
      ).to.equal(generated);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe('the BrandCatalog CRD', () => {
    it('is templated from crds/ exactly as `npm run crds` writes it', async () => {
      const [source, template] = await Promise.all([
        readFile(path.join(repoRoot(), CRD_FILE), 'utf8'),
        readFile(path.join(repoRoot(), chartCrdTemplatePath(CRD_FILE)), 'utf8'),
      ]);
      expect(template, 'the chart template is stale: run `npm run crds`').to.equal(chartCrdTemplate(source, CRD_FILE));
    });

    it('renders identical to crds/ but for the release labels and the keep policy', async () => {
      const file = parseYaml(await readFile(path.join(repoRoot(), CRD_FILE), 'utf8')) as KubernetesObject & {
        spec: unknown;
      };
      for (const [name, objects] of rendered) {
        const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
        expect(crds, name).to.have.length(1);
        const { metadata, ...rest } = crds[0]!;
        const { metadata: fileMetadata, ...fileRest } = file;
        expect(rest, name).to.deep.equal(fileRest);
        expect(metadata!.name).to.equal(fileMetadata!.name);
        expect(metadata!.labels).to.include(fileMetadata!.labels!);
        expect(metadata!.labels).to.include({
          'app.kubernetes.io/instance': 'portico',
          'app.kubernetes.io/managed-by': 'Helm',
        });
        expect(metadata!.annotations).to.deep.equal({ 'helm.sh/resource-policy': 'keep' });
      }
    });

    it('is left out with crds.install=false, and not kept with crds.keep=false', async () => {
      const minimal = files.find((f) => f.endsWith('minimal-values.yaml'))!;
      const [without, unkept] = await Promise.all([
        renderChart([minimal], { 'crds.install': 'false' }),
        renderChart([minimal], { 'crds.keep': 'false' }),
      ]);
      expect(without.filter((o) => o.kind === 'CustomResourceDefinition')).to.deep.equal([]);
      expect(unkept.find((o) => o.kind === 'CustomResourceDefinition')!.metadata!.annotations).to.equal(undefined);
    });
  });

  it('selects with name, instance and component only, and keeps the chart and version labels on metadata', () => {
    for (const [name, objects] of rendered) {
      for (const object of objects) {
        for (const [where, selector] of selectorsOf(object)) {
          expect(
            Object.keys(selector).sort(),
            `${name} ${object.kind} ${object.metadata!.name} ${where}`,
          ).to.deep.equal(['app.kubernetes.io/component', 'app.kubernetes.io/instance', 'app.kubernetes.io/name']);
        }
        const podLabels = (object.spec as any)?.template?.metadata?.labels as Record<string, string> | undefined;
        if (podLabels)
          expect(podLabels, `${name} ${object.kind}`).not.to.have.any.keys(
            'helm.sh/chart',
            'app.kubernetes.io/version',
          );
        expect(object.metadata!.labels, `${name} ${object.kind} ${object.metadata!.name}`).to.include.keys(
          'helm.sh/chart',
          'app.kubernetes.io/version',
          'app.kubernetes.io/instance',
        );
      }
    }
  });

  it("labels the operator's ServiceAccount and RBAC objects with component operator", () => {
    for (const [name, objects] of rendered) {
      const operator = objects
        .filter((o) => o.metadata!.labels?.['app.kubernetes.io/component'] === 'operator')
        .map((o) => o.kind);
      expect(operator, name).to.include.members([
        'ServiceAccount',
        'ClusterRole',
        'ClusterRoleBinding',
        'Role',
        'RoleBinding',
        'Deployment',
      ]);
    }
  });

  it('grants no one anything on Secrets', () => {
    for (const [name, objects] of rendered) {
      for (const role of objects.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole')) {
        const resources = ((role as any).rules as { resources: string[] }[]).flatMap((r) => r.resources);
        expect(resources, `${name} ${role.kind}`).not.to.include.oneOf(['secrets', '*']);
      }
    }
  });

  it('keeps every pod restricted: non-root 10001, RuntimeDefault seccomp, no escalation, no capabilities, read-only root', () => {
    for (const [name, objects] of rendered) {
      const pods = objects.flatMap((o) =>
        o.kind === 'Pod' ? [(o as any).spec] : o.kind === 'Deployment' ? [(o as any).spec.template.spec] : [],
      );
      expect(pods.length, name).to.be.greaterThanOrEqual(3);
      for (const pod of pods) {
        expect(pod.securityContext).to.deep.include({
          runAsNonRoot: true,
          runAsUser: 10001,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        for (const container of pod.containers) {
          expect(container.securityContext).to.deep.equal({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            runAsNonRoot: true,
            capabilities: { drop: ['ALL'] },
          });
        }
        const tmp = (pod.volumes as any[]).find((v) => v.name === 'tmp');
        expect(tmp.emptyDir.sizeLimit, name).to.be.a('string');
      }
    }
  });

  it('renders the same Secret and pod checksum every time: nothing is generated', async () => {
    const s3 = files.find((f) => f.endsWith('s3-values.yaml'))!;
    const [first, second] = await Promise.all([renderChart([s3]), renderChart([s3])]);
    const pick = (objects: KubernetesObject[]) => ({
      secret: objects.find((o) => o.kind === 'Secret'),
      checksums: objects
        .filter((o) => o.kind === 'Deployment')
        .map((o) => (o as any).spec.template.metadata.annotations['checksum/secret']),
    });
    expect(pick(first)).to.deep.equal(pick(second));
    expect(Object.keys((pick(first).secret as any).stringData)).to.deep.equal([
      'MONGODB_URI',
      'REDIS_URL',
      'PORTICO_ADMIN_TOKEN',
      'PORTICO_CURSOR_SECRET',
      'AWS_ACCESS_KEY_ID',
      'AWS_SECRET_ACCESS_KEY',
      'PORTICO_TOKEN_KEYS',
    ]);
  });

  it('fails `helm lint` with no values: the required public origin and token keys are missing', async () => {
    const result = await helm(['lint', CHART_DIR], { timeoutMs: 60_000 });
    expect(result.code, `${result.stdout}${result.stderr}`).to.not.equal(0);
    expect(`${result.stdout}${result.stderr}`)
      .to.match(/\/config\/publicBaseUrl/)
      .and.to.match(/\/secrets\/tokenKeys/);
  });

  it('refuses, through helm itself, what cannot work in a cluster', async () => {
    const minimal = files.find((f) => f.endsWith('minimal-values.yaml'))!;
    const refusals: [Record<string, string>, RegExp][] = [
      [{ 'config.publicBaseUrl': '' }, /\/config\/publicBaseUrl': '' does not match pattern/],
      [{ 'secrets.mongodbUri': '' }, /MONGODB_URI is required/],
      [{ 'api.replicas': '2' }, /more than one API replica needs REDIS_URL and PORTICO_CURSOR_SECRET/],
      [{ 'objectStorage.url': 'file:///data/objects' }, /each pod has its own file system/],
      [{ unknownSetting: 'x' }, /additional properties 'unknownSetting' not allowed/],
      [{ 'secrets.tokenKeys': '' }, /\/secrets\/tokenKeys': '' does not match pattern/],
      [
        { 'api.env[0].name': 'PORTICO_SMART_ALLOW_INSECURE', 'api.env[0].value': 'true' },
        /\(set in api\.env: PORTICO_SMART_ALLOW_INSECURE\) are for development and tests only/,
      ],
    ];
    const outcomes = await Promise.all(
      refusals.map(([set]) =>
        renderChart([minimal], set).then(
          () => 'rendered',
          (error: Error) => error.message,
        ),
      ),
    );
    outcomes.forEach((outcome, i) => expect(outcome).to.match(refusals[i]![1]));
  });

  it('names the token keys to set even with --skip-schema-validation (the template refuses too)', async () => {
    const minimal = files.find((f) => f.endsWith('minimal-values.yaml'))!;
    const refusals: [Record<string, string>, RegExp][] = [
      [
        { 'secrets.tokenKeys': '' },
        /PORTICO_TOKEN_KEYS is required: set secrets\.tokenKeys .* or secrets\.existingSecret/,
      ],
      [
        { 'secrets.existingSecret': 'creds', 'secrets.existingSecretKeys.tokenKeys': '' },
        /PORTICO_TOKEN_KEYS is required: secrets\.existingSecretKeys\.tokenKeys must name the key of Secret "creds"/,
      ],
    ];
    const results = await Promise.all(
      refusals.map(([set]) =>
        helm([...templateArgs([minimal], set), '--skip-schema-validation'], { timeoutMs: 60_000 }),
      ),
    );
    results.forEach((result, i) => {
      expect(result.code, result.stdout).to.not.equal(0);
      expect(result.stderr).to.match(refusals[i]![1]);
    });
  });
});
