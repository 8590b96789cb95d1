// Every parser funnels its candidate rows through one collector, so the rule for a usable row (a name and an
// absolute http(s) FHIR base URL), the way rejections are counted, and which identifiers are kept (valid NPIs,
// known ZIP codes) are the same for every format.
import { usZipCode } from '#core/catalog/geo.js';
import { validNpi } from '#core/catalog/npi.js';
import type { ParsedSource, SourceRow } from '../types.js';
import { cleanName, normaliseFhirBaseUrl } from '../normalise.js';

/** Enough examples for a status message without letting a bad 60k-row file flood it. */
export const MAX_REJECTION_REASONS = 5;

/** A row as a parser reads it: anything may be missing or of the wrong type. */
export interface CandidateRow {
  name?: unknown;
  fhirBaseUrl?: unknown;
  platformType?: SourceRow['platformType'];
  aliases?: unknown[];
  city?: unknown;
  state?: unknown;
  portalUrl?: unknown;
  logoUrl?: unknown;
  npis?: unknown[];
  postalCode?: unknown;
}

const text = (value: unknown): string | undefined => {
  if (typeof value !== 'string') return undefined;
  const cleaned = cleanName(value);
  return cleaned === '' ? undefined : cleaned;
};

export class RowCollector {
  private readonly rows: SourceRow[] = [];
  private rejected = 0;
  private readonly reasons: string[] = [];

  /** Adds the row if it is usable, else counts it as rejected; `where` locates it in the source for the reason. */
  add(candidate: CandidateRow, where: string): boolean {
    const name = text(candidate.name);
    const url = typeof candidate.fhirBaseUrl === 'string' ? candidate.fhirBaseUrl.trim() : '';
    if (name === undefined) return this.reject(`${where}: no name`);
    if (url === '') return this.reject(`${where} (${name}): no FHIR base URL`);
    if (normaliseFhirBaseUrl(url) === null) {
      return this.reject(`${where} (${name}): ${JSON.stringify(url)} is not an absolute http(s) URL`);
    }
    const row: SourceRow = { name, fhirBaseUrl: url };
    if (candidate.platformType !== undefined) row.platformType = candidate.platformType;
    const aliases = (candidate.aliases ?? []).map(text).filter((a): a is string => a !== undefined);
    if (aliases.length > 0) row.aliases = [...new Set(aliases)];
    for (const field of ['city', 'state', 'portalUrl', 'logoUrl'] as const) {
      const value = field === 'city' || field === 'state' ? text(candidate[field]) : trimmed(candidate[field]);
      if (value !== undefined) row[field] = value;
    }
    // Identifiers that do not check out are dropped, never the row: the row is still a usable brand.
    const npis = (candidate.npis ?? []).map(validNpi).filter((n): n is string => n !== undefined);
    if (npis.length > 0) row.npis = [...new Set(npis)];
    const postalCode = usZipCode(candidate.postalCode);
    if (postalCode !== undefined) row.postalCode = postalCode;
    this.rows.push(row);
    return true;
  }

  /** Counts a row the source meant to give but that cannot be used; always returns false. */
  reject(reason: string): false {
    this.rejected += 1;
    if (this.reasons.length < MAX_REJECTION_REASONS) this.reasons.push(reason);
    return false;
  }

  result(): ParsedSource {
    return { rows: this.rows, rejected: this.rejected, rejections: this.reasons };
  }
}

// URLs are trimmed but not whitespace-collapsed: `data:` logos may legitimately contain runs of spaces.
function trimmed(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const t = value.trim();
  return t === '' ? undefined : t;
}

/** JSON.parse with an error message that names the source format. */
export function parseJson(textIn: string, format: string): unknown {
  try {
    return JSON.parse(textIn.charCodeAt(0) === 0xfeff ? textIn.slice(1) : textIn);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new Error(`${format}: the source is not JSON (${detail})`);
  }
}

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
