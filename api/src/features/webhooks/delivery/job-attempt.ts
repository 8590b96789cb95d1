// One delivery attempt of an event to one endpoint (docs/api.md, Receiving webhooks): the Standard Webhooks request,
// signed afresh for this attempt (with the previous secret too while a rotation's overlap lasts), sent with the
// delivery deadline, counted and logged, and turned into the attempt log's record and the time of the next
// attempt when it failed and may be retried (the schedule, or later when the receiver's Retry-After asks).
import type { Logger } from 'pino';
import type { Clock } from '#core/clock.js';
import { PORTICO_VERSION } from '#core/version.js';
import type { WebhookSettings } from '../../../config.js';
import type { WebhookEndpoint } from '../store.js';
import { attemptDelivery, type AttemptAgents } from './attempt.js';
import type { AttemptRecord, Trigger } from './deliveries.js';
import type { DispatcherMetrics } from './dispatcher-metrics.js';
import type { StoredEvent } from '../../events/index.js';
import type { DeliveryRecorder } from './recorder.js';
import { parseRetryAfter, retryDelay } from './schedule.js';
import { signatureHeader } from './signing.js';

const USER_AGENT = `Portico-Webhooks/${PORTICO_VERSION}`;

/** An attempt to make: the event, the endpoint as it is now, which attempt this is, why, and its log id. */
export interface Job {
  event: StoredEvent;
  endpoint: WebhookEndpoint;
  attempt: number;
  trigger: Trigger;
  logId: string;
}

export interface JobAttemptDeps {
  clock: Clock;
  agents: AttemptAgents;
  settings: WebhookSettings;
  random?: () => number;
  logger: Logger;
  metrics: DispatcherMetrics;
  /** Counts the outcome towards disabling the endpoint. */
  recorder: DeliveryRecorder;
}

/** One attempt: signed afresh, sent, recorded; the next attempt's time if it failed and may be retried. */
export async function attemptJob(
  job: Job,
  deps: JobAttemptDeps,
): Promise<{ record: AttemptRecord; next: Date | undefined }> {
  const { event, endpoint } = job;
  const attemptedAt = deps.clock.now();
  const body = JSON.stringify({
    id: event.id,
    type: event.type,
    timestamp: event.occurredAt.toISOString(),
    customerAccountId: event.customerAccountId,
    data: event.data,
  });
  const timestamp = Math.floor(attemptedAt.getTime() / 1000);
  const secrets = [
    endpoint.secret,
    ...(endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > attemptedAt
      ? [endpoint.previousSecret]
      : []),
  ];
  const headers = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'webhook-id': event.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, event.id, timestamp, body),
  };
  const result = await attemptDelivery({ url: endpoint.url, body, headers }, deps.agents, deps.settings.timeoutMs);
  const gone = result.status === 410;
  const outcome = gone ? 'gone' : result.outcome;
  deps.metrics.attempted(outcome, result.durationMs);
  deps.logger.info(
    {
      eventId: event.id,
      endpointId: endpoint.id,
      attempt: job.attempt,
      outcome,
      responseStatus: result.status,
      ms: result.durationMs,
    },
    'webhook attempt',
  );

  let next: Date | undefined;
  if (result.outcome !== 'succeeded' && !gone) {
    const delay = retryDelay(job.attempt, deps.settings.retryScheduleMs, deps.random);
    const asked = parseRetryAfter(result.retryAfter, attemptedAt);
    if (delay !== undefined) next = new Date(attemptedAt.getTime() + Math.max(delay, asked ?? 0));
  }
  deps.recorder.outcome(endpoint, { at: attemptedAt, succeeded: result.outcome === 'succeeded' }, gone);
  const record: AttemptRecord = {
    id: job.logId,
    accountId: endpoint.accountId,
    endpointId: endpoint.id,
    eventId: event.id,
    eventType: event.type,
    attempt: job.attempt,
    trigger: job.trigger,
    status: result.outcome === 'succeeded' ? 'SUCCEEDED' : 'FAILED',
    responseStatus: result.status,
    durationMs: result.durationMs,
    error: result.error,
    attemptedAt,
    nextAttemptAt: next ?? null,
    createdAt: attemptedAt,
  };
  return { record, next };
}
