// The test Kubernetes API server (testkit/kubernetes.ts) is the real one: what the catalog operator
// relies on (CRDs and their schemas, custom objects, watches, Leases for leader election, Events) behaves
// as in a cluster, rejections included.
import {
  ApiException,
  ApiextensionsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  V1MicroTime,
  Watch,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { KUBERNETES_START_TIMEOUT_MS, testKubernetes } from '../../testkit/kubernetes.js';
import { until } from '../../testkit/until.js';

const VERSION = 'v1';
const PLURAL = 'gadgets';

describe('operator: the test Kubernetes API server', function () {
  let kubeconfig: KubeConfig;
  let namespace: string;
  let group: string;

  before(async function () {
    this.timeout(KUBERNETES_START_TIMEOUT_MS); // the first run builds kube-apiserver
    ({ kubeconfig } = await testKubernetes());
    namespace = `smoke-${randomBytes(4).toString('hex')}`;
    group = `g${randomBytes(4).toString('hex')}.smoke.portico.dev`;
    const created = await kubeconfig
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: namespace } } });
    expect(created.status?.phase).to.equal('Active');
    await createGadgetDefinition(kubeconfig, group);
  });

  it('serves custom objects of an Established CustomResourceDefinition, validated against its schema', async () => {
    const objects = kubeconfig.makeApiClient(CustomObjectsApi);
    const gadget = {
      apiVersion: `${group}/${VERSION}`,
      kind: 'Gadget',
      metadata: { name: 'first' },
      spec: { size: 3 },
    };
    await objects.createNamespacedCustomObject({ group, version: VERSION, namespace, plural: PLURAL, body: gadget });
    const read = (await objects.getNamespacedCustomObject({
      group,
      version: VERSION,
      namespace,
      plural: PLURAL,
      name: 'first',
    })) as typeof gadget & {
      metadata: { uid?: string };
    };
    expect(read.spec).to.deep.equal({ size: 3 });
    expect(read.metadata.uid).to.be.a('string').and.not.empty;

    const invalid = { ...gadget, metadata: { name: 'too-big' }, spec: { size: 99 } };
    const rejection = await objects
      .createNamespacedCustomObject({ group, version: VERSION, namespace, plural: PLURAL, body: invalid })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(rejection).to.be.instanceOf(ApiException);
    expect((rejection as ApiException<string>).code).to.equal(422);
  });

  it('delivers ADDED to a watch on custom objects', async () => {
    const objects = kubeconfig.makeApiClient(CustomObjectsApi);
    const gadget = (name: string) => ({
      group,
      version: VERSION,
      namespace,
      plural: PLURAL,
      body: { apiVersion: `${group}/${VERSION}`, kind: 'Gadget', metadata: { name }, spec: { size: 1 } },
    });
    const suffix = randomBytes(3).toString('hex');
    // Watches are served from the API server's watch cache of the resource, which starts only once its CRD
    // is Established: until then a watch is answered 429 "storage is (re)initializing". A watch is known to
    // be registered with a ready cache when it delivers an object that existed before it (a synthetic ADDED,
    // or the real one if the cache had not seen it yet); only then is the watched object created.
    const existing = `existing-${suffix}`;
    await objects.createNamespacedCustomObject(gadget(existing));
    const endings: string[] = [];
    const watch = await until(
      `a watch that delivers ADDED ${existing}`,
      () => openWatch(kubeconfig, `/apis/${group}/${VERSION}/namespaces/${namespace}/${PLURAL}`, existing, endings),
      {
        intervalMs: 200,
        diagnose: () => `watches that ended first: ${endings.join('; ')}`,
      },
    );
    try {
      const name = `watched-${suffix}`;
      await objects.createNamespacedCustomObject(gadget(name));
      await until(`ADDED ${name}`, () => {
        if (watch.seen.includes(`ADDED ${name}`)) return true;
        if (watch.ended)
          throw new Error(`the watch ended (${watch.ended}) before ADDED ${name}; saw: ${watch.seen.join(', ')}`);
        return false;
      });
    } finally {
      watch.stop();
    }
  });

  it('keeps Leases with optimistic concurrency, as leader election needs', async () => {
    const leases = kubeconfig.makeApiClient(CoordinationV1Api);
    const now = new V1MicroTime();
    const created = await leases.createNamespacedLease({
      namespace,
      body: {
        metadata: { name: 'portico-operator' },
        spec: { holderIdentity: 'replica-a', leaseDurationSeconds: 15, acquireTime: now, renewTime: now },
      },
    });
    expect(created.spec?.holderIdentity).to.equal('replica-a');

    const renewed = await leases.replaceNamespacedLease({
      name: 'portico-operator',
      namespace,
      body: { ...created, spec: { ...created.spec, renewTime: new V1MicroTime() } },
    });
    expect(renewed.metadata?.resourceVersion).to.not.equal(created.metadata?.resourceVersion);

    // A second replica still holding the first version loses: the server compares resourceVersions.
    const stale = await leases
      .replaceNamespacedLease({
        name: 'portico-operator',
        namespace,
        body: { ...created, spec: { ...created.spec, holderIdentity: 'replica-b' } },
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect((stale as ApiException<string>).code).to.equal(409);
    const read = await leases.readNamespacedLease({ name: 'portico-operator', namespace });
    expect(read.spec?.holderIdentity).to.equal('replica-a');
  });

  it('records core/v1 Events and finds them by the object they are about', async () => {
    const core = kubeconfig.makeApiClient(CoreV1Api);
    const about = `catalog-${randomBytes(3).toString('hex')}`;
    await core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { name: `${about}.smoke` },
        involvedObject: { apiVersion: `${group}/${VERSION}`, kind: 'Gadget', name: about, namespace },
        reason: 'Synced',
        message: 'catalog published',
        type: 'Normal',
        source: { component: 'portico-operator' },
        firstTimestamp: new Date(),
        lastTimestamp: new Date(),
        count: 1,
      },
    });
    const events = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${about}` });
    expect(events.items.map((event) => [event.reason, event.message])).to.deep.equal([['Synced', 'catalog published']]);
  });
});

async function createGadgetDefinition(kubeconfig: KubeConfig, group: string): Promise<void> {
  const extensions = kubeconfig.makeApiClient(ApiextensionsV1Api);
  const body: V1CustomResourceDefinition = {
    metadata: { name: `${PLURAL}.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: PLURAL, singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  properties: { size: { type: 'integer', minimum: 1, maximum: 10 } },
                  required: ['size'],
                },
              },
            },
          },
        },
      ],
    },
  };
  await extensions.createCustomResourceDefinition({ body });
  let conditions: unknown;
  await until(
    `CRD ${body.metadata!.name} to be Established`,
    async () => {
      const crd = await extensions.readCustomResourceDefinition({ name: body.metadata!.name! });
      conditions = crd.status?.conditions;
      return crd.status?.conditions?.some(
        (condition) => condition.type === 'Established' && condition.status === 'True',
      );
    },
    { timeoutMs: 30_000, diagnose: () => `conditions: ${JSON.stringify(conditions)}` },
  );
}

interface OpenWatch {
  /** `<type> <name>` for each event; an ERROR's whole Status object. */
  seen: string[];
  /** Why the watch ended, once it has. */
  ended?: string;
  stop(): void;
}

/**
 * Starts a watch (no resourceVersion: the current objects first, as ADDED) and resolves with it once it
 * delivers ADDED `expected`, or with undefined if it ends before that, noting how in `endings`.
 */
function openWatch(
  kubeconfig: KubeConfig,
  path: string,
  expected: string,
  endings: string[],
): Promise<OpenWatch | undefined> {
  return new Promise((resolve, reject) => {
    const watch: OpenWatch = { seen: [], stop: () => void started.then((controller) => controller.abort()) };
    const started = new Watch(kubeconfig).watch(
      path,
      {},
      (phase, object: { metadata?: { name?: string } }) => {
        watch.seen.push(phase === 'ERROR' ? `ERROR ${JSON.stringify(object)}` : `${phase} ${object.metadata?.name}`);
        if (phase === 'ADDED' && object.metadata?.name === expected) resolve(watch);
      },
      (error: unknown) => {
        const status = (error as { statusCode?: number } | null)?.statusCode;
        watch.ended = error
          ? `${status ?? ''} ${error instanceof Error ? error.message : JSON.stringify(error)}`.trim()
          : 'closed by the server';
        endings.push(`${watch.ended}${watch.seen.length > 0 ? ` after ${watch.seen.join(', ')}` : ''}`);
        resolve(undefined);
      },
    );
    started.catch(reject);
  });
}
