// The operator's Prometheus metrics: what reconciles did and how long they took, the work waiting, whether
// this instance leads, what each catalog last published (brands, logo outcomes), the Kubernetes Events
// that could not be written (an Event is how a catalog maintainer learns of an outcome; losing one silently
// would hide it), and the endpoint health checks (outcomes by catalog, checks, requests, per-host waits).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What the gauges read when scraped (the running instance sets it: see watch()). */
interface Observed {
  queueDepth(): number;
  leading(): boolean;
}

export class OperatorMetrics {
  readonly registry = new Registry();
  private observed: Observed = { queueDepth: () => 0, leading: () => false };
  readonly reconciles = new Counter({
    name: 'portico_operator_reconciles_total',
    help: 'Reconciles by result (succeeded or failed).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly reconcileSeconds = new Histogram({
    name: 'portico_operator_reconcile_duration_seconds',
    help: 'How long a reconcile took, fetching and rendering included.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });
  readonly eventWriteFailures = new Counter({
    name: 'portico_operator_event_write_failures_total',
    help: 'Kubernetes Events the operator could not write, by reason.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly brandsPublished = new Gauge({
    name: 'portico_operator_brands_published',
    help: 'Brands in the snapshot each BrandCatalog (namespace/name) last published.',
    labelNames: ['catalog'] as const,
    registers: [this.registry],
  });
  readonly logos = new Counter({
    name: 'portico_operator_logos_total',
    help: 'Logo outcomes of published snapshots: rendered, fallback (the site favicon) or failed.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly endpoints = new Gauge({
    name: 'portico_operator_endpoints',
    help: "Brands of each BrandCatalog's active snapshot by the status of their FHIR endpoint, as last published (UP, DEGRADED, DOWN, UNKNOWN).",
    labelNames: ['catalog', 'status'] as const,
    registers: [this.registry],
  });
  readonly endpointChecks = new Counter({
    name: 'portico_operator_endpoint_checks_total',
    help: 'Endpoint checks by what they observed (up, degraded, down; before a DOWN is confirmed).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly endpointRequests = new Counter({
    name: 'portico_operator_endpoint_requests_total',
    help: 'Requests of endpoint checks by document (metadata, smart-configuration) and result (ok, not-modified, or why not).',
    labelNames: ['document', 'result'] as const,
    registers: [this.registry],
  });
  readonly endpointRequestSeconds = new Histogram({
    name: 'portico_operator_endpoint_request_duration_seconds',
    help: 'How long one request of an endpoint check took (from its start, not counting the wait for the limits), redirects included.',
    labelNames: ['document'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5],
    registers: [this.registry],
  });
  readonly endpointThrottled = new Counter({
    name: 'portico_operator_endpoint_requests_throttled_total',
    help: "Requests of endpoint checks that waited for their host's rate or concurrency limit.",
    registers: [this.registry],
  });

  constructor(options: { processMetrics?: boolean } = {}) {
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
    const observed = () => this.observed;
    new Gauge({
      name: 'portico_operator_queue_depth',
      help: 'BrandCatalogs waiting for a worker.',
      registers: [this.registry],
      collect() {
        this.set(observed().queueDepth());
      },
    });
    new Gauge({
      name: 'portico_operator_leader',
      help: '1 while this instance holds the leader Lease, else 0.',
      registers: [this.registry],
      collect() {
        this.set(observed().leading() ? 1 : 0);
      },
    });
    for (const outcome of ['rendered', 'fallback', 'failed']) this.logos.inc({ outcome }, 0);
  }

  /** The running instance the gauges describe. */
  watch(observed: Observed): void {
    this.observed = observed;
  }
}
