// The dispatcher's Prometheus metrics: attempts by outcome and their latency, and the backlog (committed
// events not yet dispatched plus deliveries waiting for a retry, and how long the oldest due work has waited).
// The backlog is measured by the backstop pass at most every BACKLOG_EVERY_MS: four scans of whole collections
// on the embedded database, which after an outage, beside the scans that find work, kept it too busy to recover.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DeliveryRepository } from './deliveries.js';
import type { EventQueue } from '../../events/index.js';

const BACKLOG_EVERY_MS = 30_000;

export class DispatcherMetrics {
  private readonly attempts: Counter<'outcome'>;
  private readonly latency: Histogram<'outcome'>;
  private readonly depth: Gauge;
  private readonly oldestDue: Gauge;
  private lastBacklog = Number.NEGATIVE_INFINITY;

  constructor(registry: Registry) {
    const registers = [registry];
    this.attempts = new Counter({
      name: 'portico_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome.',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.latency = new Histogram({
      name: 'portico_webhook_attempt_duration_seconds',
      help: 'Webhook delivery attempt latency, by outcome.',
      labelNames: ['outcome'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
      registers,
    });
    this.depth = new Gauge({
      name: 'portico_webhook_queue_depth',
      help: 'Committed events not yet dispatched plus deliveries waiting for a retry (measured at most every 30 s).',
      registers,
    });
    this.oldestDue = new Gauge({
      name: 'portico_webhook_oldest_due_age_seconds',
      help: 'How long the longest-waiting due work has waited (measured at most every 30 s).',
      registers,
    });
  }

  attempted(outcome: string, durationMs: number): void {
    this.attempts.inc({ outcome });
    this.latency.observe({ outcome }, durationMs / 1000);
  }

  /** Measures the backlog when the last measure is BACKLOG_EVERY_MS old or more. */
  async backlog(
    now: Date,
    stores: { events: Pick<EventQueue, 'backlog'>; deliveries: Pick<DeliveryRepository, 'backlog'> },
  ): Promise<void> {
    if (now.getTime() - this.lastBacklog < BACKLOG_EVERY_MS) return;
    this.lastBacklog = now.getTime();
    const [events, queue] = await Promise.all([stores.events.backlog(now), stores.deliveries.backlog(now)]);
    this.depth.set(events.pending + queue.queued);
    this.oldestDue.set(Math.max(events.oldestMs, queue.oldestDueMs) / 1000);
  }
}
