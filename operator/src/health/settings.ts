// A catalog's spec.healthChecks as the checker uses it, and the timings the spec does not expose.
import { parseDuration, parseRate, type BrandCatalogSpec } from '../shared/catalog-spec.js';
import type { LimiterSettings } from './limiter.js';

export interface HealthSettings extends LimiterSettings {
  intervalMs: number;
}

/** The checks a spec asks for; undefined when it asks for none (healthChecks absent, or enabled: false). */
export function healthSettingsOf(spec: Pick<BrandCatalogSpec, 'healthChecks'>): HealthSettings | undefined {
  const checks = spec.healthChecks;
  if (!checks || checks.enabled === false) return undefined;
  // The API server fills the defaults; a resource written before this field existed has none to fill.
  return {
    intervalMs: parseDuration(checks.interval ?? '6h'),
    concurrency: checks.concurrency ?? 32,
    perHostConcurrency: checks.perHostConcurrency ?? 2,
    perHostRate: parseRate(checks.perHostRate ?? '2/s'),
  };
}

export const sameSettings = (a: HealthSettings, b: HealthSettings): boolean => JSON.stringify(a) === JSON.stringify(b);

export interface HealthTiming {
  /** The deadline of one request, redirects included. */
  requestTimeoutMs: number;
  /** Brands never checked, or overdue after an outage, are spread over this window (or the interval, if shorter). */
  catchUpMs: number;
  /** A change users would see is published within this delay (changes in between are batched). */
  publishDelayMs: number;
  /** When only check times moved, outcomes are published this often. */
  refreshPublishMs: number;
  /** How often the active snapshot is looked up, to follow brands joining and leaving. */
  snapshotPollMs: number;
  /** A DOWN after UP or DEGRADED is checked again this long after (plus up to half of it) before it shows. */
  confirmDownMs: number;
}

export const DEFAULT_TIMING: HealthTiming = {
  requestTimeoutMs: 5000,
  catchUpMs: 15 * 60_000,
  publishDelayMs: 10_000,
  refreshPublishMs: 5 * 60_000,
  snapshotPollMs: 30_000,
  confirmDownMs: 60_000,
};
