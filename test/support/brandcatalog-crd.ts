// Installs the committed BrandCatalog CRD (crds/) in the test Kubernetes API server, for every test that
// needs BrandCatalogs there. Load it through the client's loadYaml, not a plain YAML parse: the generated
// client serializes its own model (defaultValue, xKubernetesListType, xKubernetesValidations), and silently
// drops `default` and the x-kubernetes-* keys of a plain object everywhere but under `items`.
import { ApiException, ApiextensionsV1Api, loadYaml, type KubeConfig, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { repoRoot } from '../../core/src/infra/repo-root.js';
import { CRD_FILE, CRD_NAME } from '../../operator/src/crd/generate.js';

/** Creates the CRD, or replaces whatever version of it is there, and waits until its resources are served. */
export async function installBrandCatalogCrd(kubeconfig: KubeConfig): Promise<V1CustomResourceDefinition> {
  const extensions = kubeconfig.makeApiClient(ApiextensionsV1Api);
  const crd = loadYaml<V1CustomResourceDefinition>(await readFile(path.join(repoRoot(), CRD_FILE), 'utf8'));
  try {
    await extensions.createCustomResourceDefinition({ body: crd });
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 409)) throw error;
    const current = await extensions.readCustomResourceDefinition({ name: CRD_NAME });
    await extensions.replaceCustomResourceDefinition({ name: CRD_NAME, body: { ...crd, metadata: { ...crd.metadata, resourceVersion: current.metadata!.resourceVersion! } } });
  }
  const deadline = Date.now() + 30_000;
  for (;;) {
    const current = await extensions.readCustomResourceDefinition({ name: CRD_NAME });
    if (current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return current;
    if (Date.now() > deadline) throw new Error(`${CRD_NAME} not Established: ${JSON.stringify(current.status?.conditions)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
