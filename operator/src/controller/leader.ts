// One leader at a time through a coordination.k8s.io Lease: the holder renews it every renewMs; another
// instance takes it over only once it has gone unrenewed for its whole duration. Writes carry the read
// resourceVersion, so two candidates can never both succeed.
import type { V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { microTime, statusOf, type KubeClient } from './kube.js';

export interface LeaderOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationSeconds: number;
  renewMs: number;
}

export class LeaderElector {
  private timer: NodeJS.Timeout | undefined;
  private leading = false;
  private stopped = false;

  constructor(
    private readonly kube: KubeClient,
    private readonly options: LeaderOptions,
    private readonly logger: Logger,
    private readonly callbacks: { onStartedLeading: () => void; onStoppedLeading: () => void },
    private readonly now: () => Date = () => new Date(),
  ) {}

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    const tick = async () => {
      if (this.stopped) return;
      let held = false;
      try {
        held = await this.tryAcquireOrRenew();
      } catch (error) {
        this.logger.warn({ err: error }, 'leader election: the lease could not be read or written');
      }
      if (held && !this.leading) {
        this.leading = true;
        this.logger.info({ identity: this.options.identity }, 'leader election: leading');
        this.callbacks.onStartedLeading();
      } else if (!held && this.leading) {
        this.leading = false;
        this.logger.warn({ identity: this.options.identity }, 'leader election: lost the lease');
        this.callbacks.onStoppedLeading();
      }
      if (!this.stopped) this.timer = setTimeout(() => void tick(), this.options.renewMs);
    };
    void tick();
  }

  /** Stops renewing and, when leading, releases the lease so a successor need not wait it out. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (!this.leading) return;
    this.leading = false;
    this.callbacks.onStoppedLeading();
    const lease = await this.kube.readLease(this.options.namespace, this.options.name).catch(() => undefined);
    if (lease?.spec?.holderIdentity === this.options.identity) {
      lease.spec.holderIdentity = undefined;
      lease.spec.renewTime = undefined;
      await this.kube.replaceLease(this.options.namespace, lease).catch(() => {});
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity, leaseDurationSeconds } = this.options;
    const now = this.now();
    const lease = await this.kube.readLease(namespace, name);
    if (!lease) {
      try {
        await this.kube.createLease(namespace, {
          metadata: { name, namespace },
          spec: { holderIdentity: identity, leaseDurationSeconds, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 },
        } as V1Lease);
        return true;
      } catch (error) {
        if (statusOf(error) === 409) return false; // another candidate created it first
        throw error;
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity;
    const renewed = spec.renewTime ? new Date(spec.renewTime).getTime() : 0;
    const expired = renewed + (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000 < now.getTime();
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
