// One request of an endpoint check: GET one document of a FHIR server through the public-only agent (every
// hop, redirects included, checked after DNS), conditional on what the last answer carried (ETag,
// Last-Modified), under a tight deadline and byte limit. A 304 keeps the previous reading. The outcome is a
// small record kept between checks, with a reason from a fixed set (also a metric label).
import type { IncomingHttpHeaders } from 'node:http';
import type { Scheduler } from '#core/clock.js';
import type { PublicHttpsAgent } from '#core/net/address-policy.js';
import { FetchError, fetchHttpsResponse, type FetchLimits } from '#core/net/fetch.js';
import { isSmartConfiguration, readCapabilityStatement } from './documents.js';

export const USER_AGENT = 'Portico-catalog-operator (endpoint health; https://portico.dev)';

export type HealthDocument = 'metadata' | 'smart-configuration';

/** Why a probe ended as it did: a fixed set, so it can label metrics. */
export const PROBE_REASONS = [
  'ok',
  'invalid', // answered 200 with something that is not the document
  'http-4xx',
  'http-5xx',
  'http-other',
  'timeout',
  'tls',
  'connection',
  'refused-address',
  'not-https',
  'too-many-redirects',
  'too-large',
  'unexpected-304', // a 304 to a request that was not conditional
] as const;
export type ProbeReason = (typeof PROBE_REASONS)[number];

/** What a check remembers of one document between checks. */
export interface ProbeMemory {
  ok: boolean;
  reason: ProbeReason;
  /** The HTTP status of a failed answer, for people reading the operator's state; null otherwise. */
  status: number | null;
  /** metadata only: the CapabilityStatement's fhirVersion. */
  fhirVersion: string | null;
  etag: string | null;
  lastModified: string | null;
}

export interface ProbeResult extends ProbeMemory {
  /** The answer was 304: the previous reading stands. */
  notModified: boolean;
  ms: number;
}

export interface ProbeSettings {
  agent: PublicHttpsAgent;
  timeoutMs: number;
  /** What `ms` is measured by: the sweeper's scheduler, so it is on the timeline its tests move (docs/testing.md). */
  scheduler: Pick<Scheduler, 'monotonic'>;
}

/**
 * Byte limits: a CapabilityStatement's first 64 KiB hold its resourceType and fhirVersion (the rest is not
 * read); a SMART configuration is a few KiB, so a larger one is refused.
 */
const LIMITS: Record<HealthDocument, Omit<FetchLimits, 'timeoutMs'> & { truncate: boolean; accept: string }> = {
  metadata: { maxBytes: 64 * 1024, maxRedirects: 3, truncate: true, accept: 'application/fhir+json' },
  'smart-configuration': { maxBytes: 64 * 1024, maxRedirects: 3, truncate: false, accept: 'application/json' },
};

export const documentUrl = (fhirBaseUrl: string, document: HealthDocument): string =>
  document === 'metadata' ? `${fhirBaseUrl}/metadata` : `${fhirBaseUrl}/.well-known/smart-configuration`;

/** Fetches one document and reads it; never throws for anything the endpoint does. */
export async function probe(
  fhirBaseUrl: string,
  document: HealthDocument,
  previous: ProbeMemory | undefined,
  settings: ProbeSettings,
): Promise<ProbeResult> {
  const { scheduler } = settings;
  const started = scheduler.monotonic();
  const { truncate, accept, ...limits } = LIMITS[document];
  const validators: Record<string, string> = {};
  if (previous?.etag) validators['if-none-match'] = previous.etag;
  if (previous?.lastModified) validators['if-modified-since'] = previous.lastModified;
  const elapsed = () => Math.round(scheduler.monotonic() - started);
  try {
    const answer = await fetchHttpsResponse(
      documentUrl(fhirBaseUrl, document),
      { ...limits, timeoutMs: settings.timeoutMs },
      { accept, userAgent: USER_AGENT, truncate, headers: validators, agent: settings.agent },
    );
    if (answer.status === 304) {
      if (!previous || Object.keys(validators).length === 0) return failure('unexpected-304', elapsed(), 304);
      // The validators of a 304 replace the stored ones when it sends them (RFC 9111 §4.3.4).
      return { ...previous, ...validatorsOf(answer.headers, previous), notModified: true, ms: elapsed() };
    }
    if (answer.status !== 200)
      return failure(
        answer.status >= 500 ? 'http-5xx' : answer.status >= 400 ? 'http-4xx' : 'http-other',
        elapsed(),
        answer.status,
      );
    const kept = validatorsOf(answer.headers);
    if (document === 'metadata') {
      const reading = readCapabilityStatement(answer.bytes);
      return {
        ok: reading.capabilityStatement,
        reason: reading.capabilityStatement ? 'ok' : 'invalid',
        status: null,
        fhirVersion: reading.fhirVersion,
        ...kept,
        notModified: false,
        ms: elapsed(),
      };
    }
    const ok = isSmartConfiguration(answer.bytes);
    return {
      ok,
      reason: ok ? 'ok' : 'invalid',
      status: null,
      fhirVersion: null,
      ...kept,
      notModified: false,
      ms: elapsed(),
    };
  } catch (error) {
    return failure(reasonOf(error), elapsed(), null);
  }
}

function failure(reason: ProbeReason, ms: number, status: number | null): ProbeResult {
  return { ok: false, reason, status, fhirVersion: null, etag: null, lastModified: null, notModified: false, ms };
}

/** ETag and Last-Modified of an answer, within sane lengths (they are stored and sent back). */
function validatorsOf(
  headers: IncomingHttpHeaders,
  fallback?: ProbeMemory,
): { etag: string | null; lastModified: string | null } {
  const bounded = (value: string | undefined) =>
    value !== undefined && value.length > 0 && value.length <= 200 ? value : undefined;
  return {
    etag: bounded(headers.etag) ?? fallback?.etag ?? null,
    lastModified: bounded(headers['last-modified']) ?? fallback?.lastModified ?? null,
  };
}

const TLS_CODES =
  /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|UNABLE_TO_(VERIFY|GET)_|EPROTO$|ERR_OSSL_)/;

function reasonOf(error: unknown): ProbeReason {
  if (!(error instanceof FetchError)) return 'connection';
  switch (error.reason) {
    case 'fetch-failed':
      return error.code !== undefined && TLS_CODES.test(error.code) ? 'tls' : 'connection';
    case 'http-status': // a redirect without Location
      return 'http-other';
    default:
      return error.reason;
  }
}
