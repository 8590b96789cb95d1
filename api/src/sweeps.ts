// The background sweeps a replica runs every few minutes: what expires is removed, since FerretDB has no TTL index.
// Each is bounded and runs on the deadline of long operations (a sweep scans its collection on FerretDB); a failed
// round is logged and the next one tries again.
import type { Logger } from 'pino';
import type { Clock } from '#core/clock.js';

/** How often the sweeps run. */
export const SWEEP_INTERVAL_MS = 5 * 60_000;
/** The most records one round of a sweep removes. */
const SWEEP_BATCH = 1_000;

export interface Sweepable {
  /** Expired idempotency records (docs/api.md, "Rules every operation follows"), up to `limit`. */
  idempotency: { sweep(now: number, limit: number): Promise<unknown> };
  /** Expired link tokens, up to `limit`. */
  linkTokens: { sweep(limit: number): Promise<unknown> };
  /** Ingested bundles' records no reader needs any more (docs/operations.md, "Clinical ingest"). */
  observations: { tidyAll(): Promise<unknown> };
  /** Access-log entries older than the retention (docs/api.md, "The access log"), up to `limit`. */
  accessLog: { sweep(limit: number): Promise<unknown> };
  /** Links to patients' pages whose link and page both expired, up to `limit`. */
  portalSessions: { sweep(before: Date, limit: number): Promise<unknown> };
}

/** Starts the sweeps (unref'd: they never keep the process alive); the returned function stops them. */
export function startSweeps(targets: Sweepable, clock: Clock, logger: Logger): () => void {
  // The log lines read as they did before the sweeps had a module of their own (alerts may match them).
  const round = (task: () => Promise<unknown>, failed: string) =>
    task().catch((error: unknown) => logger.warn({ err: error }, `${failed}; next round`));
  const timer = setInterval(() => {
    void round(
      () => targets.idempotency.sweep(clock.now().getTime(), SWEEP_BATCH),
      'idempotency: expired records could not be swept',
    );
    void round(() => targets.linkTokens.sweep(SWEEP_BATCH), 'link tokens: expired tokens could not be swept');
    void round(() => targets.observations.tidyAll(), 'observations: bundle records could not be tidied');
    void round(() => targets.accessLog.sweep(SWEEP_BATCH), 'access log: old entries could not be swept');
    void round(
      () => targets.portalSessions.sweep(clock.now(), SWEEP_BATCH),
      "patients' pages: expired links could not be swept",
    );
  }, SWEEP_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
