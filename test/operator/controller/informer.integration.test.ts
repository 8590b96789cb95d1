// The informer after a watch ends, against a real Kubernetes API server, as client-go's reflector goes on:
// 410 Gone (an ERROR event, or the answer to a watch's start) and any other ERROR event lead to a fresh list
// and a watch from that list's resourceVersion; 429 resumes from where the watch was. In each case a change
// made while no watch is open (after the list, before the next watch starts) still reaches the handlers.
// The real server ends a watch from a compacted position with ERROR 410; the other endings it sends only in
// trouble, so ObservedKube makes them: it answers a start with 410 as @kubernetes/client-node reports it,
// or ends the open watch with an ERROR event, as the server ends a stream.
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { pino } from 'pino';
import { CatalogInformer } from '../../../operator/src/controller/informer.js';
import { GROUP, KubeClient, PLURAL, VERSION } from '../../../operator/src/shared/kube.js';
import { installBrandCatalogCrd } from '../../../testkit/brandcatalog-crd.js';
import { KUBERNETES_START_TIMEOUT_MS, testKubernetes } from '../../../testkit/kubernetes.js';
import { until } from '../../../testkit/until.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

interface Watched {
  from: string;
  /** The resourceVersion of the last event it delivered. */
  reached?: string;
  open: boolean;
  /** 'ERROR <code>', 'answered <status>', 'closed' or 'failed'. */
  ended?: string;
  /** Ends it as the server ends a stream after an ERROR event. */
  fail(status: { code: number; reason: string }): void;
}

/** The real client, observed; a test may hold a watch's start, or have it answered with an HTTP status. */
class ObservedKube extends KubeClient {
  readonly lists: string[] = [];
  readonly watches: Watched[] = [];
  private readonly plans = new Map<number, { hold?: Promise<void>; answer?: number }>();

  /** Holds the watch with this index (0: the informer's first) until release() is called. */
  hold(index: number): { release(): void } {
    let release = () => {};
    this.plans.set(index, { hold: new Promise<void>((resolve) => (release = resolve)) });
    return { release: () => release() };
  }

  /** Answers the start of the watch with this index with an HTTP status instead of asking the server. */
  answer(index: number, status: number): void {
    this.plans.set(index, { answer: status });
  }

  current(): Watched | undefined {
    const last = this.watches.at(-1);
    return last?.open && !last.ended ? last : undefined;
  }

  override async listCatalogs(): ReturnType<KubeClient['listCatalogs']> {
    const list = await super.listCatalogs();
    this.lists.push(list.resourceVersion);
    return list;
  }

  override async watchCatalogs(
    ...[resourceVersion, onEvent, done]: Parameters<KubeClient['watchCatalogs']>
  ): Promise<AbortController> {
    const plan = this.plans.get(this.watches.length);
    const watched: Watched = { from: resourceVersion, open: false, fail: () => {} };
    this.watches.push(watched);
    await plan?.hold;
    if (plan?.answer) {
      // As @kubernetes/client-node reports a start answered with anything but 200.
      watched.ended = `answered ${plan.answer}`;
      done(Object.assign(new Error(STATUS_CODES[plan.answer]), { statusCode: plan.answer }));
      return new AbortController();
    }
    let finished = false;
    const finish = (how: string, error: unknown) => {
      if (finished) return;
      finished = true;
      watched.open = false;
      watched.ended ??= how;
      done(error);
    };
    const controller = await super.watchCatalogs(
      resourceVersion,
      (type, object) => {
        if (finished) return;
        const fields = object as { code?: number; metadata?: { resourceVersion?: string } };
        if (type === 'ERROR') watched.ended ??= `ERROR ${fields.code}`;
        else if (fields.metadata?.resourceVersion) watched.reached = fields.metadata.resourceVersion;
        onEvent(type, object);
      },
      (error) => finish(error ? 'failed' : 'closed', error),
    );
    watched.open = !finished;
    watched.fail = (status) => {
      if (finished) return;
      watched.ended = `ERROR ${status.code}`;
      onEvent('ERROR', { kind: 'Status', apiVersion: 'v1', status: 'Failure', ...status } as { code: number });
      finish('closed', null);
      controller.abort();
    };
    return controller;
  }
}

describe('operator: the catalog informer after a watch ends (real Kubernetes API server)', function () {
  this.timeout(60_000);
  let kubeconfig: KubeConfig;
  let custom: CustomObjectsApi;
  let namespace: string;
  let kube: ObservedKube;
  let informer: CatalogInformer;
  let seen: string[];

  before(async function () {
    this.timeout(KUBERNETES_START_TIMEOUT_MS); // the first run on a machine builds kube-apiserver
    ({ kubeconfig } = await testKubernetes());
    await installBrandCatalogCrd(kubeconfig);
    namespace = `i-${randomUUID().slice(0, 8)}`;
    await kubeconfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    custom = kubeconfig.makeApiClient(CustomObjectsApi);
  });

  beforeEach(async () => {
    kube = new ObservedKube(kubeconfig);
    seen = [];
    informer = new CatalogInformer(
      kube,
      { onChange: (c) => seen.push(c.metadata.name), onDelete: () => {} },
      { relistMs: 60_000, watchdogMs: 60_000 },
      logger,
    );
    await informer.start();
    // A BrandCatalog watch cache that is still starting answers 429 first; the informer backs off and retries.
    await until('the informer to have a watch open', () => kube.current(), {
      diagnose: () => JSON.stringify(kube.watches),
    });
  });

  afterEach(() => informer.stop());

  /**
   * Ends the open watch with `end`, holds the informer's next watch while a catalog is created, and returns
   * what that next watch started from once the catalog reached the handlers through it.
   */
  async function changeWhileNoWatchIsOpen(end: () => Promise<void> | void, nextWatch: number): Promise<Watched> {
    const next = kube.hold(nextWatch);
    await end();
    await until('the informer to start its next watch', () => kube.watches.length > nextWatch, {
      diagnose: () => JSON.stringify(kube.watches),
    });
    const name = `meanwhile-${randomUUID().slice(0, 6)}`;
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'BrandCatalog',
        metadata: { name, namespace },
        spec: { sources: [{ name: 'list', format: 'csv', inline: 'name,fhirBaseUrl\nX,https://x.example/r4\n' }] },
      },
    });
    next.release();
    await until(`${name} to reach the handlers`, () => seen.includes(name), {
      diagnose: () => JSON.stringify(kube.watches),
    });
    return kube.watches[nextWatch]!;
  }

  /** The informer listed once more, and its next watch started from that list's resourceVersion. */
  function expectRelisted(listsBefore: number, next: Watched): void {
    expect(kube.lists).to.have.length(listsBefore + 1);
    expect(next.from).to.equal(kube.lists.at(-1));
  }

  it('relists and watches from the new list after the server ends a watch from a compacted position with ERROR 410', async () => {
    const lists = kube.lists.length;
    const resumed = kube.watches.length;
    expectRelisted(lists, await changeWhileNoWatchIsOpen(() => informer.resumeFrom('1'), resumed + 1));
    expect(kube.watches[resumed]!.ended).to.equal('ERROR 410'); // the real server's answer, not ObservedKube's
  });

  it("relists and watches from the new list when a watch's start is answered 410 Gone", async () => {
    const lists = kube.lists.length;
    kube.answer(kube.watches.length, 410);
    expectRelisted(lists, await changeWhileNoWatchIsOpen(() => informer.resumeFrom('1'), kube.watches.length + 1));
  });

  it('relists, after a backoff, and watches from the new list when a watch ends with an ERROR event other than 410', async () => {
    const lists = kube.lists.length;
    const failing = kube.current()!;
    expectRelisted(
      lists,
      await changeWhileNoWatchIsOpen(() => failing.fail({ code: 500, reason: 'InternalError' }), kube.watches.length),
    );
  });

  it('backs off and resumes from where it was, without a list, when a watch ends with ERROR 429', async () => {
    const lists = kube.lists.length;
    const failing = kube.current()!;
    const next = await changeWhileNoWatchIsOpen(
      () => failing.fail({ code: 429, reason: 'TooManyRequests' }),
      kube.watches.length,
    );
    expect(kube.lists).to.have.length(lists);
    expect(next.from).to.equal(failing.reached ?? failing.from);
  });
});
