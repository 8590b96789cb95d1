// The test Kubernetes API server (test/support/kubernetes.ts) is the real one: what the catalog operator
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
import { KUBERNETES_START_TIMEOUT_MS, testKubernetes } from '../support/kubernetes.js';

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
    const created = await kubeconfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    expect(created.status?.phase).to.equal('Active');
    await createGadgetDefinition(kubeconfig, group);
  });

  it('serves custom objects of an Established CustomResourceDefinition, validated against its schema', async () => {
    const objects = kubeconfig.makeApiClient(CustomObjectsApi);
    const gadget = { apiVersion: `${group}/${VERSION}`, kind: 'Gadget', metadata: { name: 'first' }, spec: { size: 3 } };
    await objects.createNamespacedCustomObject({ group, version: VERSION, namespace, plural: PLURAL, body: gadget });
    const read = (await objects.getNamespacedCustomObject({ group, version: VERSION, namespace, plural: PLURAL, name: 'first' })) as typeof gadget & {
      metadata: { uid?: string };
    };
    expect(read.spec).to.deep.equal({ size: 3 });
    expect(read.metadata.uid).to.be.a('string').and.not.empty;

    const invalid = { ...gadget, metadata: { name: 'too-big' }, spec: { size: 99 } };
    const rejection = await objects
      .createNamespacedCustomObject({ group, version: VERSION, namespace, plural: PLURAL, body: invalid })
      .then(() => undefined, (error: unknown) => error);
    expect(rejection).to.be.instanceOf(ApiException);
    expect((rejection as ApiException<string>).code).to.equal(422);
  });

  it('delivers ADDED to a watch on custom objects', async () => {
    const objects = kubeconfig.makeApiClient(CustomObjectsApi);
    const name = `watched-${randomBytes(3).toString('hex')}`;
    const seen: string[] = [];
    let abort: AbortController | undefined;
    const added = new Promise<void>((resolve, reject) => {
      void new Watch(kubeconfig)
        .watch(
          `/apis/${group}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
          {},
          (phase, object: { metadata?: { name?: string } }) => {
            seen.push(`${phase} ${object.metadata?.name}`);
            if (phase === 'ADDED' && object.metadata?.name === name) resolve();
          },
          (error: unknown) => reject(error ?? new Error(`the watch ended before ADDED ${name}; saw: ${seen.join(', ')}`)),
        )
        .then((controller) => {
          abort = controller;
          return objects.createNamespacedCustomObject({
            group,
            version: VERSION,
            namespace,
            plural: PLURAL,
            body: { apiVersion: `${group}/${VERSION}`, kind: 'Gadget', metadata: { name }, spec: { size: 1 } },
          });
        })
        .catch(reject);
    });
    try {
      await added;
    } finally {
      abort?.abort();
    }
    expect(seen).to.include(`ADDED ${name}`);
  });

  it('keeps Leases with optimistic concurrency, as leader election needs', async () => {
    const leases = kubeconfig.makeApiClient(CoordinationV1Api);
    const now = new V1MicroTime();
    const created = await leases.createNamespacedLease({
      namespace,
      body: { metadata: { name: 'portico-operator' }, spec: { holderIdentity: 'replica-a', leaseDurationSeconds: 15, acquireTime: now, renewTime: now } },
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
      .replaceNamespacedLease({ name: 'portico-operator', namespace, body: { ...created, spec: { ...created.spec, holderIdentity: 'replica-b' } } })
      .then(() => undefined, (error: unknown) => error);
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
              properties: { spec: { type: 'object', properties: { size: { type: 'integer', minimum: 1, maximum: 10 } }, required: ['size'] } },
            },
          },
        },
      ],
    },
  };
  await extensions.createCustomResourceDefinition({ body });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const crd = await extensions.readCustomResourceDefinition({ name: body.metadata!.name! });
    if (crd.status?.conditions?.some((condition) => condition.type === 'Established' && condition.status === 'True')) return;
    if (Date.now() > deadline) throw new Error(`CRD ${body.metadata!.name} not Established: ${JSON.stringify(crd.status?.conditions)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
