// What attempts leave behind, written in small batches so that a busy dispatcher does not write once per
// attempt: the attempt log (one insert per 50 ms), and each endpoint's delivery fields (one update per
// endpoint per 100 ms, by increments and forward-only dates, so batches from several replicas never undo
// each other). After a failure the disable rule is checked; a 410 disables at once. Outcomes are kept apart by
// the failure count they were made under: once the owner starts it afresh (sets the endpoint ACTIVE), those
// made before only date the endpoint and never disable it again (docs/api.md, "Receiving webhooks").
import type { Logger } from 'pino';
import type { Clock } from '#core/clock.js';
import type { WebhookSettings } from '../../../config.js';
import type { DeliveryOutcome, WebhookEndpoint, WebhookEndpointStore } from '../store.js';
import { pendingRecord, type AttemptRecord, type DeliveryRepository, type QueuedDelivery } from './deliveries.js';

const LOG_EVERY_MS = 50;
const FIELDS_EVERY_MS = 100;

export interface RecorderDeps {
  deliveries: DeliveryRepository;
  endpoints: WebhookEndpointStore;
  clock: Clock;
  logger: Logger;
  settings: WebhookSettings;
  onDisabled: (endpoint: WebhookEndpoint, reason: 'consecutive_failures' | 'gone') => void;
}

interface Pending {
  endpoint: WebhookEndpoint;
  outcomes: DeliveryOutcome[];
}

export class DeliveryRecorder {
  private records: AttemptRecord[] = [];
  private logTimer: NodeJS.Timeout | undefined;
  private readonly fields = new Map<string, Pending>();
  private fieldsTimer: NodeJS.Timeout | undefined;
  private readonly writes = new Set<Promise<void>>();

  constructor(private readonly deps: RecorderDeps) {}

  pending(delivery: QueuedDelivery): AttemptRecord {
    return pendingRecord(delivery);
  }

  log(record: AttemptRecord): void {
    this.records.push(record);
    this.logTimer ??= setTimeout(() => this.track(this.writeLog()), LOG_EVERY_MS);
  }

  outcome(endpoint: WebhookEndpoint, outcome: DeliveryOutcome, gone: boolean): void {
    const key = `${endpoint.accountId}/${endpoint.id}/${endpoint.failureResets}`;
    const entry = this.fields.get(key) ?? { endpoint, outcomes: [] };
    entry.outcomes.push(outcome);
    this.fields.set(key, entry);
    if (gone) this.track(this.disable(endpoint, undefined, 'gone'));
    this.fieldsTimer ??= setTimeout(() => this.track(this.writeFields()), FIELDS_EVERY_MS);
  }

  /** Writes everything recorded so far. */
  async flush(): Promise<void> {
    await this.writeLog();
    await this.writeFields();
    while (this.writes.size > 0) await Promise.allSettled([...this.writes]);
  }

  private track(write: Promise<void>): void {
    this.writes.add(write);
    void write.finally(() => this.writes.delete(write));
  }

  private async writeLog(): Promise<void> {
    clearTimeout(this.logTimer);
    this.logTimer = undefined;
    const batch = this.records;
    this.records = [];
    try {
      await this.deps.deliveries.log(batch);
    } catch (error) {
      this.deps.logger.warn({ err: error, records: batch.length }, 'could not write webhook attempt records');
    }
  }

  private async writeFields(): Promise<void> {
    clearTimeout(this.fieldsTimer);
    this.fieldsTimer = undefined;
    const batch = [...this.fields.values()];
    this.fields.clear();
    await Promise.all(batch.map((entry) => this.writeEndpoint(entry)));
  }

  private async writeEndpoint({ endpoint, outcomes }: Pending): Promise<void> {
    const now = this.deps.clock.now();
    try {
      const after = await this.deps.endpoints.recordOutcomes(endpoint, outcomes, now);
      // Under a count started afresh since (the endpoint set ACTIVE again), these outcomes only dated it.
      const counted = after?.failureResets === endpoint.failureResets;
      const failing = outcomes.some((o) => !o.succeeded);
      if (counted && failing && after.consecutiveFailures >= this.deps.settings.disableAfter) {
        const failingBefore = new Date(now.getTime() - this.deps.settings.disableWindowMs);
        await this.disable(
          endpoint,
          { failures: this.deps.settings.disableAfter, failingBefore },
          'consecutive_failures',
        );
      }
    } catch (error) {
      this.deps.logger.warn(
        { err: error, endpointId: endpoint.id },
        'could not record webhook delivery outcomes on the endpoint',
      );
    }
  }

  private async disable(
    endpoint: WebhookEndpoint,
    rule: Parameters<WebhookEndpointStore['disable']>[1],
    reason: 'consecutive_failures' | 'gone',
  ): Promise<void> {
    const disabled = await this.deps.endpoints.disable(endpoint, rule, this.deps.clock.now());
    if (disabled) this.deps.onDisabled(disabled, reason);
  }
}
