import { expect } from 'chai';
import { shutDown } from '../../api/src/shutdown.js';

describe('api: the shutdown order', () => {
  it('stops what produces work before what it hands work to, and the caches last', async () => {
    const calls: string[] = [];
    const step = (name: string) => async () => {
      calls.push(name);
    };
    await shutDown(
      {
        stopSweeps: () => calls.push('sweeps'),
        accessLog: { flushed: step('access log') },
        dispatcher: { stop: async (grace) => void calls.push(`dispatcher ${grace}`) },
        sync: { stop: step('sync') },
        vault: { settled: step('vault') },
        catalog: { stop: step('catalog') },
        endpointHealth: { stop: step('endpoint health') },
        observations: { settled: step('observations') },
        caches: { close: step('caches') },
      },
      1234,
    );
    expect(calls).to.deep.equal([
      'sweeps',
      'access log',
      'dispatcher 1234',
      'sync',
      'vault',
      'catalog',
      'endpoint health',
      'observations',
      'caches',
    ]);
  });

  it('waits for background bundles no longer than the timeout', async () => {
    let closed = false;
    const never = () => new Promise<void>(() => undefined);
    const done = async () => undefined;
    await shutDown(
      {
        stopSweeps: () => undefined,
        accessLog: { flushed: done },
        dispatcher: { stop: done },
        sync: { stop: done },
        vault: { settled: done },
        catalog: { stop: done },
        endpointHealth: { stop: done },
        observations: { settled: never },
        caches: { close: async () => void (closed = true) },
      },
      1,
    );
    expect(closed).to.equal(true);
  });
});
