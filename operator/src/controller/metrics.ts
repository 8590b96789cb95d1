// The operator's Prometheus metrics: what reconciles did and how long they took, and the Kubernetes Events
// that could not be written (an Event is how a catalog maintainer learns of an outcome; losing one silently
// would hide it).
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class OperatorMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({ name: 'portico_operator_reconciles_total', help: 'Reconciles by result (succeeded or failed).', labelNames: ['result'] as const, registers: [this.registry] });
  readonly reconcileSeconds = new Histogram({
    name: 'portico_operator_reconcile_duration_seconds',
    help: 'How long a reconcile took, fetching and rendering included.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });
  readonly eventWriteFailures = new Counter({ name: 'portico_operator_event_write_failures_total', help: 'Kubernetes Events the operator could not write, by reason.', labelNames: ['reason'] as const, registers: [this.registry] });

  constructor(options: { processMetrics?: boolean } = {}) {
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
  }
}
