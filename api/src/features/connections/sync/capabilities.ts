// The health systems' CapabilityStatements a sync reads (docs/connecting.md, "Sync"): `{base}/metadata`, with the
// page deadline and the sync's token, kept an hour per FHIR base, and the types each lists (plan.ts, listedTypes).
import type { Clock } from '#core/clock.js';
import { underBase } from '../../smart/index.js';
import { openPage, readWhole, parsedJson, SyncFailure, type PageReaderDeps } from './fhir-pages.js';
import { CAPABILITIES_TTL_MS, listedTypes } from './plan.js';

/** A CapabilityStatement larger than this is not read (Epic's are about 1 MB). */
const MAX_STATEMENT_BYTES = 4 * 1024 * 1024;
/** Failures of the token, not of the statement: they end the run as a search's would. */
export const TOKEN_FAILURES = new Set([
  'reauthorization_required',
  'token_key_missing',
  'token_refresh_failed',
  'unauthorized',
]);

export class Capabilities {
  /** By FHIR base: the types its statement lists, until when. */
  private readonly statements = new Map<string, { types: Set<string> | null; until: number }>();

  constructor(private readonly clock: Clock) {}

  /**
   * The types the health system's CapabilityStatement lists; null when it lists none or cannot be read: then every
   * type the scope covers is tried.
   */
  async types(
    pages: PageReaderDeps,
    connectionId: string,
    binding: { accountId: string; fhirBaseUrl: string; patient: string },
  ): Promise<Set<string> | null> {
    const now = this.clock.now().getTime();
    const known = this.statements.get(binding.fhirBaseUrl);
    if (known && known.until > now) return known.types;
    let types: Set<string> | null = null;
    try {
      const page = await openPage(pages, connectionId, binding, underBase(binding.fhirBaseUrl, 'metadata'));
      const text = await readWhole(page.chunks, MAX_STATEMENT_BYTES);
      types = text === null ? null : listedTypes(parsedJson(text));
    } catch (error) {
      if (error instanceof SyncFailure && TOKEN_FAILURES.has(error.reason)) throw error;
    }
    this.statements.set(binding.fhirBaseUrl, { types, until: now + CAPABILITIES_TTL_MS });
    return types;
  }
}
