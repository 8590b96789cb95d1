// The health monitor's lifecycle without a cluster: a catalog whose checks failed to start is retried from
// what the catalog is now, and never once it is deleted or no longer asks for checks (review of issue 12).
import { expect } from 'chai';
import { pino } from 'pino';
import { HealthMonitor } from '../../../operator/src/health/monitor.js';
import { OperatorMetrics } from '../../../operator/src/controller/metrics.js';
import { PublicHttpsAgent } from '../../../core/src/net/address-policy.js';
import type { BrandCatalogObject } from '../../../operator/src/controller/kube.js';
import type { HealthMonitorDeps } from '../../../operator/src/health/monitor.js';

const checked = (spec: Record<string, unknown> = {}) =>
  ({
    metadata: { namespace: 'ns', name: 'c', uid: 'u' },
    spec: { sources: [], healthChecks: { enabled: true, interval: '6h', concurrency: 4, perHostRate: '2/s', perHostConcurrency: 2 }, suspend: false, ...spec },
    status: {},
  }) as unknown as BrandCatalogObject;

describe('operator: endpoint health monitor lifecycle', () => {
  let failures: number;
  let monitor: HealthMonitor;
  const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

  beforeEach(() => {
    failures = 1; // the first start fails (its database read), later ones work
    const store = {
      deleteOrphans: async () => 0,
      loadWithState: async () => {
        if (failures-- > 0) throw new Error('database unavailable');
        return null;
      },
      pointer: async () => null,
      deleteCatalog: async () => {},
    };
    const deps = {
      snapshots: { active: async () => null, load: async () => null },
      store,
      kube: { patchStatus: async () => {} },
      clock: { now: () => new Date() },
      logger: pino({ level: 'silent' }),
      metrics: new OperatorMetrics(),
      agentFor: () => new PublicHttpsAgent(),
      retryMs: 50,
    } as unknown as HealthMonitorDeps;
    monitor = new HealthMonitor(deps);
    monitor.start();
  });
  afterEach(() => monitor.stop());

  it('retries a failed start', async () => {
    await monitor.track(checked());
    expect(monitor.catalogs).to.deep.equal([]);
    await settle();
    expect(monitor.catalogs).to.deep.equal(['ns/c']);
  });

  it('does not retry for a catalog deleted meanwhile', async () => {
    await monitor.track(checked());
    await monitor.forget(checked());
    await settle();
    expect(monitor.catalogs).to.deep.equal([]);
  });

  it('retries with the catalog as it is now: not at all once healthChecks is gone or it is suspended', async () => {
    for (const now of [{ healthChecks: undefined }, { suspend: true }]) {
      failures = 1;
      await monitor.track(checked());
      await monitor.track(checked(now));
      await settle();
      expect(monitor.catalogs, JSON.stringify(now)).to.deep.equal([]);
    }
  });
});
