// The Kubernetes calls the operator makes, in one place: BrandCatalogs (list, watch, status, finalizers),
// the ConfigMaps sources may point at, Events and Leases.
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  Watch,
  setHeaderOptions,
  type KubeConfig,
  type V1Lease,
} from '@kubernetes/client-node';
import type { BrandCatalogSpec } from './catalog-spec.js';
import type { CatalogRef } from '#core/catalog/snapshots.js';

import { GROUP, PLURAL, VERSION } from './catalog-spec.js';

export { GROUP, PLURAL, VERSION };
export const FINALIZER = 'catalog.portico.dev/snapshots';

export interface BrandCatalogObject {
  apiVersion: string;
  kind: 'BrandCatalog';
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation: number;
    resourceVersion: string;
    deletionTimestamp?: string;
    finalizers?: string[];
  };
  spec: BrandCatalogSpec;
  status?: Record<string, unknown>;
}

/**
 * A metav1.MicroTime: the API server insists on six fractional digits, and the client passes MicroTime
 * fields through unformatted, so a Date would go out with three and be refused.
 */
export const microTime = (date: Date): Date => date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z') as unknown as Date;

export const keyOf = (catalog: { metadata: { namespace: string; name: string } }) =>
  `${catalog.metadata.namespace}/${catalog.metadata.name}`;

/** The catalog's namespace and name, as snapshots are keyed. */
export const refOf = (catalog: { metadata: { namespace: string; name: string } }): CatalogRef => ({
  namespace: catalog.metadata.namespace,
  name: catalog.metadata.name,
});

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export class KubeClient {
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;
  private readonly coordination: CoordinationV1Api;

  constructor(readonly config: KubeConfig) {
    this.custom = config.makeApiClient(CustomObjectsApi);
    this.core = config.makeApiClient(CoreV1Api);
    this.coordination = config.makeApiClient(CoordinationV1Api);
  }

  async listCatalogs(): Promise<{ items: BrandCatalogObject[]; resourceVersion: string }> {
    const list = (await this.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })) as {
      items: BrandCatalogObject[];
      metadata: { resourceVersion: string };
    };
    return { items: list.items, resourceVersion: list.metadata.resourceVersion };
  }

  /** Starts a watch of every BrandCatalog; `done` is called once when it ends, with the reason. */
  watchCatalogs(
    resourceVersion: string,
    onEvent: (type: string, object: BrandCatalogObject | { code?: number }) => void,
    done: (error: unknown) => void,
  ): Promise<AbortController> {
    return new Watch(this.config).watch(
      `/apis/${GROUP}/${VERSION}/${PLURAL}`,
      { resourceVersion, allowWatchBookmarks: true },
      onEvent,
      done,
    );
  }

  async patchStatus(catalog: BrandCatalogObject, status: Record<string, unknown>): Promise<void> {
    await this.custom.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace: catalog.metadata.namespace,
        name: catalog.metadata.name,
        body: { status },
      },
      mergePatch,
    );
  }

  /** Sets the finalizers, failing with 409 when the object changed since it was read. */
  async setFinalizers(catalog: BrandCatalogObject, finalizers: string[]): Promise<void> {
    await this.custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace: catalog.metadata.namespace,
        name: catalog.metadata.name,
        body: { metadata: { finalizers, resourceVersion: catalog.metadata.resourceVersion } },
      },
      mergePatch,
    );
  }

  async configMapValue(namespace: string, name: string, key: string): Promise<string> {
    const map = await this.core.readNamespacedConfigMap({ namespace, name });
    const value = map.data?.[key];
    if (value === undefined) throw new Error(`ConfigMap ${namespace}/${name} has no key "${key}"`);
    return value;
  }

  async event(
    catalog: BrandCatalogObject,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    component: string,
  ): Promise<void> {
    const now = new Date();
    await this.core.createNamespacedEvent({
      namespace: catalog.metadata.namespace,
      body: {
        metadata: { generateName: `${catalog.metadata.name}.`, namespace: catalog.metadata.namespace },
        involvedObject: {
          apiVersion: catalog.apiVersion,
          kind: 'BrandCatalog',
          name: catalog.metadata.name,
          namespace: catalog.metadata.namespace,
          uid: catalog.metadata.uid,
        },
        type,
        reason,
        message: message.slice(0, 1024),
        source: { component },
        reportingComponent: component,
        reportingInstance: component,
        firstTimestamp: now,
        lastTimestamp: now,
        eventTime: microTime(now),
        action: reason,
        count: 1,
      },
    });
  }

  async readLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    try {
      return await this.coordination.readNamespacedLease({ namespace, name });
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.coordination.createNamespacedLease({ namespace, body: lease });
  }

  /** Replaces the lease; 409 when someone else wrote it since `lease` was read. */
  replaceLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.coordination.replaceNamespacedLease({ namespace, name: lease.metadata!.name!, body: lease });
  }
}

/** The HTTP status of a failed Kubernetes call, when it has one. */
export function statusOf(error: unknown): number | undefined {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}
