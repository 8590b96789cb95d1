// When to try a failed delivery again: the retry schedule with ±20 % jitter (so endpoints recovering from an
// outage are not hit by every queued delivery at once), never earlier than a 429/503 Retry-After asks
// (capped at an hour).

export const MAX_RETRY_AFTER_MS = 3_600_000;
const JITTER = 0.2;

/**
 * Milliseconds until the next attempt after attempt number `attempt` (1 = the first) failed; undefined when
 * the schedule is exhausted.
 */
export function retryDelay(
  attempt: number,
  scheduleMs: readonly number[],
  random: () => number = Math.random,
): number | undefined {
  const base = scheduleMs[attempt - 1];
  if (base === undefined) return undefined;
  return Math.max(0, Math.round(base * (1 + JITTER * (2 * random() - 1))));
}

/** A Retry-After header (delay-seconds or an HTTP date) as milliseconds from `now`, capped; undefined if absent or
 * malformed. */
export function parseRetryAfter(header: string | undefined, now: Date): number | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  let ms: number;
  if (/^\d{1,10}$/.test(value)) ms = Number(value) * 1000;
  else {
    const at = Date.parse(value);
    if (Number.isNaN(at) || !/[a-z]/i.test(value)) return undefined; // HTTP dates have a weekday and a month
    ms = at - now.getTime();
  }
  return Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS);
}
