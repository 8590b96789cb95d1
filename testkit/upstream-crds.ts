// The upstream CustomResourceDefinitions of the kinds the chart can render besides its own: the Prometheus
// Operator's ServiceMonitor and the Gateway API's HTTPRoute, taken from their Go modules (the module proxy is
// the one registry the tests may use; a module is downloaded once into Go's module cache, then read from it)
// and installed in the test Kubernetes API server, so that the chart's objects of those kinds meet the real
// schemas there.
import {
  ApiException,
  ApiextensionsV1Api,
  loadYaml,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { run } from './chart.js';
import { until } from './until.js';

export interface UpstreamCrd {
  module: string;
  version: string;
  /** The CRD file inside the module. */
  file: string;
}

/** Pinned: prometheus-operator's newest release on the proxy; gateway-api's newest that Go 1.26 can download. */
export const UPSTREAM_CRDS: readonly UpstreamCrd[] = [
  {
    module: 'github.com/prometheus-operator/prometheus-operator',
    version: 'v0.85.0',
    file: 'example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml',
  },
  {
    module: 'sigs.k8s.io/gateway-api',
    version: 'v1.6.3',
    file: 'config/crd/standard/gateway.networking.k8s.io_httproutes.yaml',
  },
];

/** The module's folder in Go's module cache, downloading it first when needed. */
async function moduleDir(module: string, version: string): Promise<string> {
  const result = await run('go', ['mod', 'download', '-json', `${module}@${version}`], {
    timeoutMs: 300_000,
    env: { GOWORK: 'off' },
  });
  const info = JSON.parse(result.stdout || '{}') as { Dir?: string; Error?: string };
  if (result.code !== 0 || !info.Dir)
    throw new Error(`cannot download ${module}@${version} from the Go module proxy: ${info.Error ?? result.stderr}`);
  return info.Dir;
}

export async function readUpstreamCrd(crd: UpstreamCrd): Promise<V1CustomResourceDefinition> {
  const text = await readFile(path.join(await moduleDir(crd.module, crd.version), crd.file), 'utf8');
  return loadYaml<V1CustomResourceDefinition>(text);
}

/** Creates (or replaces) each upstream CRD and waits until the API server serves its kind. */
export async function installUpstreamCrds(kubeconfig: KubeConfig): Promise<V1CustomResourceDefinition[]> {
  const extensions = kubeconfig.makeApiClient(ApiextensionsV1Api);
  return Promise.all(
    UPSTREAM_CRDS.map(async (source) => {
      const crd = await readUpstreamCrd(source);
      const name = crd.metadata!.name!;
      try {
        await extensions.createCustomResourceDefinition({ body: crd });
      } catch (error) {
        if (!(error instanceof ApiException && error.code === 409)) throw error;
        const current = await extensions.readCustomResourceDefinition({ name });
        await extensions.replaceCustomResourceDefinition({
          name,
          body: { ...crd, metadata: { ...crd.metadata, resourceVersion: current.metadata!.resourceVersion! } },
        });
      }
      let conditions: unknown;
      return until(
        `${name} to be Established`,
        async () => {
          const current = await extensions.readCustomResourceDefinition({ name });
          conditions = current.status?.conditions;
          return current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') && current;
        },
        { timeoutMs: 30_000, intervalMs: 100, diagnose: () => `conditions: ${JSON.stringify(conditions)}` },
      );
    }),
  );
}
