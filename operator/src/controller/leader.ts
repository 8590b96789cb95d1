// One leader at a time through a coordination.k8s.io Lease, with client-go's semantics:
// - expiry is judged on this instance's own monotonic clock (when it last saw the record change), never by
//   comparing another machine's renewTime with local time, so clock skew cannot steal a live lease;
// - the leader steps down once it has failed to renew for renewDeadlineMs (< the lease duration), so it is
//   gone before anyone else may take over, and every Lease call has a timeout, so a hung call counts as a
//   failure instead of keeping a stale leader alive;
// - writes carry the read resourceVersion, so two candidates never both succeed.
import type { Logger } from 'pino';
import { microTime, statusOf, type KubeClient } from '../shared/kube.js';

export interface LeaderOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationSeconds: number;
  /** How often to try to acquire or renew. */
  retryMs: number;
  /** A leader that has not renewed for this long steps down; must be below the lease duration. */
  renewDeadlineMs: number;
}

export class LeaderElector {
  private timer: NodeJS.Timeout | undefined;
  private leading = false;
  private stopped = false;
  private lastRenewed = 0;
  /** Whether this instance ever took the lease (stop() then releases it if it still names this instance). */
  private held = false;
  /** The lease read or write under way. */
  private inFlight: Promise<boolean> | undefined;
  private contact: number | undefined;
  /** The record as last seen, and when (monotonic), for expiry decisions. */
  private observed: { record: string; at: number } | undefined;

  constructor(
    private readonly kube: KubeClient,
    private readonly options: LeaderOptions,
    private readonly logger: Logger,
    private readonly callbacks: { onStartedLeading: () => void; onStoppedLeading: () => void },
  ) {
    if (options.renewDeadlineMs >= options.leaseDurationSeconds * 1000)
      throw new Error('renewDeadlineMs must be below the lease duration');
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** When (performance.now()) the API server last answered a Lease read; undefined before the first answer. */
  get lastContact(): number | undefined {
    return this.contact;
  }

  start(): void {
    const tick = async () => {
      if (this.stopped) return;
      let renewed = false;
      try {
        this.inFlight = withTimeout(this.tryAcquireOrRenew(), this.options.retryMs * 2);
        renewed = await this.inFlight;
      } catch (error) {
        this.logger.warn({ err: error }, 'leader election: the lease could not be read or written');
      }
      if (renewed) this.held = true;
      if (this.stopped) return; // stop() ran while the call was in flight (and releases what it took)
      const now = performance.now();
      if (renewed) this.lastRenewed = now;
      if (renewed && !this.leading) {
        this.leading = true;
        this.logger.info({ identity: this.options.identity }, 'leader election: leading');
        this.callbacks.onStartedLeading();
      } else if (!renewed && this.leading && now - this.lastRenewed > this.options.renewDeadlineMs) {
        this.leading = false;
        this.logger.warn(
          { identity: this.options.identity },
          'leader election: could not renew within the deadline; stepping down',
        );
        this.callbacks.onStoppedLeading();
      }
      this.timer = setTimeout(() => void tick(), this.options.retryMs);
    };
    void tick();
  }

  /**
   * Stops renewing and releases the lease when this instance holds it, so a successor need not wait it out: also
   * when the call in flight as it stopped had just taken it.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.leading) {
      this.leading = false;
      this.callbacks.onStoppedLeading();
    }
    await this.inFlight?.catch(() => false);
    if (!this.held) return; // never held it
    const lease = await this.kube.readLease(this.options.namespace, this.options.name).catch(() => undefined);
    if (lease?.spec?.holderIdentity === this.options.identity) {
      lease.spec.holderIdentity = undefined;
      lease.spec.renewTime = undefined;
      await withTimeout(this.kube.replaceLease(this.options.namespace, lease), 5000).catch(() => {});
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity, leaseDurationSeconds } = this.options;
    const now = new Date();
    const lease = await this.kube.readLease(namespace, name);
    this.contact = performance.now();
    if (!lease) {
      try {
        await this.kube.createLease(namespace, {
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          },
        });
        return true;
      } catch (error) {
        if (statusOf(error) === 409) return false; // another candidate created it first
        throw error;
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity;
    // Another holder's lease expires when its record has not changed for a whole lease duration on our clock.
    const record = `${holder ?? ''}|${String(spec.renewTime ?? '')}|${lease.metadata?.resourceVersion ?? ''}`;
    if (this.observed?.record !== record) this.observed = { record, at: performance.now() };
    const expired = performance.now() - this.observed.at > (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    if (holder && holder !== identity && !expired) return false;
    lease.spec = {
      ...spec,
      holderIdentity: identity,
      leaseDurationSeconds,
      renewTime: microTime(now),
      ...(holder !== identity && { acquireTime: microTime(now), leaseTransitions: (spec.leaseTransitions ?? 0) + 1 }),
    };
    try {
      await this.kube.replaceLease(namespace, lease);
      return true;
    } catch (error) {
      if (statusOf(error) === 409) return false;
      throw error;
    }
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`lease call took more than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
