// Installs the committed BrandCatalog CRD (crds/) in the test Kubernetes API server, for every test that
// needs BrandCatalogs there. Load it through the client's loadYaml, not a plain YAML parse: the generated
// client serializes its own model (defaultValue, xKubernetesListType, xKubernetesValidations), and silently
// drops `default` and the x-kubernetes-* keys of a plain object everywhere but under `items`.
import {
  ApiException,
  ApiextensionsV1Api,
  loadYaml,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { repoRoot } from '#core/infra/repo-root.js';
import { CRD_FILE, CRD_NAME } from '../operator/src/crd/generate.js';
import { until } from './until.js';

/** Creates the CRD, or replaces whatever version of it is there, and waits until its resources are served. */
export async function installBrandCatalogCrd(kubeconfig: KubeConfig): Promise<V1CustomResourceDefinition> {
  const extensions = kubeconfig.makeApiClient(ApiextensionsV1Api);
  const crd = loadYaml<V1CustomResourceDefinition>(await readFile(path.join(repoRoot(), CRD_FILE), 'utf8'));
  try {
    await extensions.createCustomResourceDefinition({ body: crd });
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 409)) throw error;
    const current = await extensions.readCustomResourceDefinition({ name: CRD_NAME });
    await extensions.replaceCustomResourceDefinition({
      name: CRD_NAME,
      body: { ...crd, metadata: { ...crd.metadata, resourceVersion: current.metadata!.resourceVersion! } },
    });
  }
  let conditions: unknown;
  return until(
    `${CRD_NAME} to be Established`,
    async () => {
      const current = await extensions.readCustomResourceDefinition({ name: CRD_NAME });
      conditions = current.status?.conditions;
      return current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') && current;
    },
    { timeoutMs: 30_000, intervalMs: 100, diagnose: () => `conditions: ${JSON.stringify(conditions)}` },
  );
}
