// What a webhook dispatcher (dispatcher.ts) does with its work (docs/api.md, "Receiving webhooks"). Committed events
// come from the outbox: a dispatcher claims one by lease, finds the account's endpoints that should hear it
// (targets.ts), and makes each first attempt at once, at most 10 in flight per endpoint. A failed attempt that has
// retries left goes to the retry queue (deliveries.ts), which the dispatcher that queued it works through with
// timers; the event is then done.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Clock } from '#core/clock.js';
import type { WebhookSettings } from '../../../config.js';
import type { WebhookEndpoint, WebhookEndpointStore } from '../store.js';
import type { AttemptAgents } from './attempt.js';
import { attemptJob, type Job, type JobAttemptDeps } from './job-attempt.js';
import { DispatcherMetrics } from './dispatcher-metrics.js';
import { deliveryId, newAttemptId, type DeliveryRepository, type QueuedDelivery, type Trigger } from './deliveries.js';
import { Lanes } from './lanes.js';
import { localPermits, type Permits } from './permits.js';
import type { EventQueue, EventOutbox, OutboxRecovery, StoredEvent, WorkSignals } from '../../events/index.js';
import { DeliveryRecorder } from './recorder.js';
import { currentEndpoint, targetsOf, unreached } from './targets.js';

export const PER_ENDPOINT_IN_FLIGHT = 10;

export interface DispatcherDeps {
  /** Committed events, each taken on a lease until every endpoint has it (event-queue.ts). */
  events: EventQueue;
  /** Settles the events writers that died left staged (outbox-recovery.ts). */
  recovery: Pick<OutboxRecovery, 'recoverStaged'>;
  /** Takes the dispatcher's own events (an endpoint disabled). */
  outbox: Pick<EventOutbox, 'event' | 'append'>;
  deliveries: DeliveryRepository;
  endpoints: WebhookEndpointStore;
  signals: WorkSignals;
  clock: Clock;
  logger: Logger;
  registry: Registry;
  settings: WebhookSettings;
  agents: AttemptAgents;
  /** The per-endpoint cap shared by replicas (RedisPermits); local lanes alone without Redis. */
  permits?: Permits;
  random?: () => number;
}

/** What a Dispatcher does (dispatcher.ts decides when): an event's first attempts, and the retry queue's. */
export abstract class DeliveryRunner {
  readonly id = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  protected running = false;
  private readonly lanes: Lanes;
  private readonly working = new Set<string>();
  protected readonly inFlight = new Set<Promise<unknown>>();
  protected readonly timers = new Map<string, NodeJS.Timeout>();
  protected readonly recorder: DeliveryRecorder;
  protected readonly metrics: DispatcherMetrics;
  private readonly attemptDeps: JobAttemptDeps;

  constructor(protected readonly deps: DispatcherDeps) {
    this.lanes = new Lanes(PER_ENDPOINT_IN_FLIGHT, deps.settings.concurrency);
    this.recorder = new DeliveryRecorder({
      ...deps,
      onDisabled: (endpoint, reason) => this.track(this.disabled(endpoint, reason)),
    });
    this.metrics = new DispatcherMetrics(deps.registry);
    this.attemptDeps = { ...deps, metrics: this.metrics, recorder: this.recorder };
  }

  protected track(task: Promise<unknown>): void {
    this.inFlight.add(task);
    void task
      .catch((error: unknown) =>
        this.deps.logger.warn({ err: error }, 'webhook dispatcher task failed; the poll retries what it left'),
      )
      .finally(() => this.inFlight.delete(task));
  }

  /**
   * Runs `task` once the endpoint has room: a slot in this replica's lane and, with Redis, one of the
   * endpoint's permits shared by every replica. Skipped (false) when the dispatcher stops meanwhile or `skip` says so.
   */
  private withSlot(endpointId: string, task: () => Promise<void>, skip: () => boolean = () => false): Promise<boolean> {
    const stopped = () => !this.running || skip();
    return this.lanes.run(endpointId, async () => {
      const release = await (this.deps.permits ?? localPermits).acquire(endpointId, stopped);
      if (!release) return false;
      try {
        if (stopped()) return false;
        await task();
        return true;
      } finally {
        release();
      }
    });
  }

  private lease(): Date {
    return new Date(this.deps.clock.now().getTime() + this.deps.settings.leaseMs);
  }

  /**
   * Claims a committed event and makes every first attempt; then the event is done. The lease is renewed
   * while attempts wait for their endpoints' room, so no other replica takes the event meanwhile; if it is
   * lost all the same, attempts not yet made are left to the replica that took it.
   */
  protected async dispatchEvent(
    id: string,
    known?: Pick<StoredEvent, 'type' | 'customerAccountId' | 'targetEndpointId'>,
  ): Promise<void> {
    if (this.working.has(id)) return;
    this.working.add(id);
    let lost = false;
    let heartbeat: NodeJS.Timeout | undefined;
    let done = false;
    try {
      // An event this process committed, that no endpoint is to hear (the common case of an account without
      // endpoints): settled in one write instead of a claim and a mark (four database calls and two locks).
      // If a dispatcher holds it or it is done already, the claim below decides as always.
      if (
        known &&
        (await targetsOf(this.deps.endpoints, known)).length === 0 &&
        (await this.deps.events.settleUntargeted(id, this.deps.clock.now()))
      )
        return;
      const event = await this.deps.events.claim(id, this.id, this.lease(), this.deps.clock.now());
      if (!event) return;
      heartbeat = setInterval(() => {
        void this.deps.events.renew(id, this.id, this.lease()).then(
          (held) => (lost ||= !held),
          () => {},
        );
      }, this.deps.settings.leaseMs / 3);
      heartbeat.unref();
      let targets = await targetsOf(this.deps.endpoints, event);
      // Claimed before by a dispatcher that stopped part-way: endpoints it reached, or whose retry it queued,
      // are not sent to again.
      if (event.claims > 1) targets = await unreached(this.deps.deliveries, event.id, targets);
      const trigger: Trigger = event.targetEndpointId ? 'MANUAL' : 'SCHEDULED';
      const made = await Promise.all(
        targets.map((endpoint) =>
          this.withSlot(
            endpoint.id,
            () => this.attemptFirst({ event, endpoint, attempt: 1, trigger, logId: newAttemptId() }),
            () => lost,
          ),
        ),
      );
      if (made.every(Boolean)) {
        await this.deps.events.markDispatched(id, this.id);
        done = true;
      }
    } catch (error) {
      this.deps.logger.warn(
        { err: error, eventId: id },
        'dispatching an event failed; it is retried when its lease ends',
      );
    } finally {
      clearInterval(heartbeat);
      // Stopped part-way: hand the event back at once rather than when the lease ends.
      if (heartbeat && !done && !lost) await this.deps.events.release(id, this.id).catch(() => {});
      this.working.delete(id);
    }
  }

  private async attemptFirst(job: Job): Promise<void> {
    const endpoint = await currentEndpoint(this.deps.endpoints, job.endpoint);
    if (!endpoint) return; // paused, disabled or deleted since the event was fanned out: it receives nothing
    const { record, next } = await attemptJob({ ...job, endpoint }, this.attemptDeps);
    this.recorder.log(record);
    if (next)
      await this.queue({
        ...pick(job),
        attempt: job.attempt + 1,
        nextAttemptAt: next,
        logId: newAttemptId(),
        id: deliveryId(job.event.id, endpoint.id),
        createdAt: this.deps.clock.now(),
      });
  }

  /**
   * A queued delivery whose time has come (or that this dispatcher was told of). It is claimed only once its
   * endpoint has room, so its lease covers one attempt (shorter than the lease) and never a wait.
   */
  protected async runDelivery(id: string): Promise<void> {
    if (this.working.has(id)) return;
    this.working.add(id);
    clearTimeout(this.timers.get(id));
    this.timers.delete(id);
    try {
      await this.withSlot(endpointOf(id), async () => {
        const delivery = await this.deps.deliveries.claim(id, this.id, this.lease(), this.deps.clock.now());
        if (!delivery) return;
        const event = await this.deps.events.get(delivery.eventId);
        const current =
          event &&
          (await currentEndpoint(this.deps.endpoints, { accountId: delivery.accountId, id: delivery.endpointId }));
        if (!event || !current) {
          await this.deps.deliveries.finish(id, this.id);
          // The event expired, or the endpoint was deleted, paused or disabled since the retry was queued.
          if (event)
            await this.deps.deliveries.settle({
              ...this.recorder.pending(delivery),
              status: 'FAILED',
              error: 'not attempted: the endpoint no longer receives deliveries',
            });
          return;
        }
        const { record, next } = await attemptJob(
          { event, endpoint: current, attempt: delivery.attempt, trigger: delivery.trigger, logId: delivery.logId },
          this.attemptDeps,
        );
        await this.deps.deliveries.settle(record);
        if (next) {
          const again: QueuedDelivery = {
            ...delivery,
            attempt: delivery.attempt + 1,
            nextAttemptAt: next,
            logId: newAttemptId(),
            trigger: 'SCHEDULED',
          };
          if (await this.deps.deliveries.reschedule(again, this.id)) this.remind(again);
        } else await this.deps.deliveries.finish(id, this.id);
      });
    } catch (error) {
      this.deps.logger.warn(
        { err: error, deliveryId: id },
        'a queued webhook delivery failed to run; it is retried when its lease ends',
      );
    } finally {
      this.working.delete(id);
    }
  }

  private async queue(delivery: QueuedDelivery): Promise<void> {
    for (const queued of await this.deps.deliveries.enqueue([delivery])) this.remind(queued);
  }

  /** Runs the delivery when it is due (a timer; the poll finds it if this process goes away). */
  private remind(delivery: QueuedDelivery): void {
    if (!this.running) return;
    const delay = Math.max(0, delivery.nextAttemptAt.getTime() - this.deps.clock.now().getTime());
    if (delay > 2_147_000_000) return; // beyond a timer's reach: the poll will find it
    clearTimeout(this.timers.get(delivery.id));
    const timer = setTimeout(() => {
      this.timers.delete(delivery.id);
      this.track(this.runDelivery(delivery.id));
    }, delay);
    timer.unref();
    this.timers.set(delivery.id, timer);
  }

  /** An endpoint was disabled: its queued deliveries stop, and the account's other endpoints hear of it. */
  private async disabled(endpoint: WebhookEndpoint, reason: string): Promise<void> {
    for (const [id, timer] of this.timers) {
      if (endpointOf(id) !== endpoint.id) continue;
      clearTimeout(timer);
      this.timers.delete(id);
    }
    this.deps.logger.warn({ endpointId: endpoint.id, reason }, 'webhook endpoint disabled');
    // The event first: if cancelling fails part-way, retries that remain find the endpoint DISABLED and stop.
    await this.deps.outbox.append([
      this.deps.outbox.event('webhook_endpoint.disabled', endpoint.accountId, `webhook_endpoint:${endpoint.id}`, {
        webhookEndpointId: endpoint.id,
        reason,
      }),
    ]);
    await this.deps.deliveries.cancel(endpoint.accountId, endpoint.id, 'the endpoint was disabled');
  }
}

/** The endpoint a queued delivery goes to (its id is `<event id>:<endpoint id>`). */
const endpointOf = (deliveryId: string): string => deliveryId.slice(deliveryId.lastIndexOf(':') + 1);

/** The fields a queued delivery takes from a job. */
function pick(job: Job): Pick<QueuedDelivery, 'accountId' | 'endpointId' | 'eventId' | 'eventType' | 'trigger'> {
  return {
    accountId: job.endpoint.accountId,
    endpointId: job.endpoint.id,
    eventId: job.event.id,
    eventType: job.event.type,
    trigger: 'SCHEDULED',
  };
}
