// The health monitor's lifecycle without a cluster: a catalog whose checks failed to start is retried from
// what the catalog is now, and never once it is deleted or no longer asks for checks.
import { expect } from 'chai';
import { pino } from 'pino';
import { HealthMonitor } from '../../../operator/src/health/monitor.js';
import { OperatorMetrics } from '../../../operator/src/shared/metrics.js';
import { PublicHttpsAgent } from '#core/net/address-policy.js';
import type { BrandCatalogObject } from '../../../operator/src/shared/kube.js';
import type { HealthMonitorDeps } from '../../../operator/src/health/monitor.js';
import { ManualTime } from '../../../testkit/clock.js';

const checked = (spec: Record<string, unknown> = {}) =>
  ({
    metadata: { namespace: 'ns', name: 'c', uid: 'u' },
    spec: {
      sources: [],
      healthChecks: { enabled: true, interval: '6h', concurrency: 4, perHostRate: '2/s', perHostConcurrency: 2 },
      suspend: false,
      ...spec,
    },
    status: {},
  }) as unknown as BrandCatalogObject;

describe('operator: endpoint health monitor lifecycle', () => {
  let failures: number;
  /** Starts tried (each reads the last publication first). */
  let starts: number;
  let monitor: HealthMonitor;
  let time: ManualTime;
  /** Past the retry's wait; what the retry set off has settled (the fakes answer at once). */
  const afterRetryWait = () => time.tick(50);

  beforeEach(() => {
    failures = 1; // the first start fails (its database read), later ones work
    starts = 0;
    time = new ManualTime();
    const store = {
      deleteOrphans: async () => 0,
      loadWithState: async () => {
        starts++;
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
      clock: time,
      scheduler: time,
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
    await time.tick(49);
    expect(starts, 'tries before the retry is due').to.equal(1);
    await time.tick(1);
    expect(starts).to.equal(2);
    expect(monitor.catalogs).to.deep.equal(['ns/c']);
  });

  it('does not retry for a catalog deleted meanwhile', async () => {
    await monitor.track(checked());
    await monitor.forget(checked());
    await afterRetryWait();
    expect(starts, 'tries').to.equal(1);
    expect(monitor.catalogs).to.deep.equal([]);
  });

  it('retries with the catalog as it is now: not at all once healthChecks is gone or it is suspended', async () => {
    for (const now of [{ healthChecks: undefined }, { suspend: true }]) {
      failures = 1;
      starts = 0;
      await monitor.track(checked());
      await monitor.track(checked(now));
      await afterRetryWait();
      expect(starts, `tries (${JSON.stringify(now)})`).to.equal(1);
      expect(monitor.catalogs, JSON.stringify(now)).to.deep.equal([]);
    }
  });
});
