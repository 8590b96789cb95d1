// Hand-maintained lists: RFC 4180 CSV with a header row naming any of
// name,fhirBaseUrl,platformType,city,state,portalUrl,logoUrl,aliases in any order (name and fhirBaseUrl
// required; aliases separated by `|`). Parsing is csv-parse's, which handles quoted fields with embedded
// commas, quotes and line breaks, CRLF or LF, and a byte-order mark.
import { parse } from 'csv-parse/sync';
import { PLATFORM_TYPES, type PlatformType } from '#core/catalog/model.js';
import type { ParsedSource } from '../types.js';
import { RowCollector, type CandidateRow } from './collector.js';

const FORMAT = 'csv';
const COLUMNS = ['name', 'fhirBaseUrl', 'platformType', 'city', 'state', 'portalUrl', 'logoUrl', 'aliases'] as const;
type Column = (typeof COLUMNS)[number];
const REQUIRED: readonly Column[] = ['name', 'fhirBaseUrl'];
const ALIAS_SEPARATOR = '|';

interface CsvRecord {
  record: string[];
  info: { lines: number };
}

function readRecords(text: string): CsvRecord[] {
  try {
    return parse(text, {
      bom: true,
      info: true,
      // Rows with missing trailing fields are common in spreadsheet exports; rows with extra ones are rejected below.
      relax_column_count: true,
      // A stray quote inside an unquoted field is kept literally rather than failing the whole file.
      relax_quotes: true,
      skip_empty_lines: true,
      skip_records_with_empty_values: true,
    }) as unknown as CsvRecord[];
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new Error(`${FORMAT}: the source is not valid CSV (${detail})`);
  }
}

/** Column positions from the header row; header names match case-insensitively, unknown columns are ignored. */
function readHeader(header: string[]): Map<Column, number> {
  const positions = new Map<Column, number>();
  header.forEach((raw, i) => {
    const column = COLUMNS.find((c) => c.toLowerCase() === raw.trim().toLowerCase());
    if (column === undefined) return;
    if (positions.has(column)) throw new Error(`${FORMAT}: the header names the column "${column}" twice`);
    positions.set(column, i);
  });
  const missing = REQUIRED.filter((c) => !positions.has(c));
  if (missing.length > 0) {
    // Names the columns found (a few, shortened), never the source's content at length: errors reach status and Events.
    const found = header.slice(0, 8).map((c) => (c.length > 40 ? `${c.slice(0, 40)}…` : c));
    throw new Error(
      `${FORMAT}: the header row lacks ${missing.map((c) => `"${c}"`).join(' and ')} (found ${header.length} columns: ${found.join(',')}${header.length > 8 ? ',…' : ''})`,
    );
  }
  return positions;
}

const PLATFORMS: ReadonlyMap<string, PlatformType> = new Map(PLATFORM_TYPES.map((p) => [p.toLowerCase(), p]));

export function parseCsv(text: string): ParsedSource {
  if (typeof text !== 'string') throw new Error(`${FORMAT}: the source is not text`);
  const records = readRecords(text);
  const [header, ...rows] = records;
  if (header === undefined) throw new Error(`${FORMAT}: the source is empty (a header row is required)`);
  const positions = readHeader(header.record);
  const out = new RowCollector();
  for (const { record, info } of rows) {
    const where = `line ${info.lines}`;
    if (record.length > header.record.length) {
      out.reject(`${where}: ${record.length} fields where the header has ${header.record.length}`);
      continue;
    }
    const field = (column: Column): string | undefined => {
      const i = positions.get(column);
      return i === undefined ? undefined : record[i];
    };
    const candidate: CandidateRow = {
      name: field('name'),
      fhirBaseUrl: field('fhirBaseUrl'),
      city: field('city'),
      state: field('state'),
      portalUrl: field('portalUrl'),
      logoUrl: field('logoUrl'),
      aliases: (field('aliases') ?? '').split(ALIAS_SEPARATOR),
    };
    const platform = (field('platformType') ?? '').trim();
    if (platform !== '') {
      const known = PLATFORMS.get(platform.toLowerCase());
      // A typo in the platform would silently misfile the brand; rejecting the row makes it visible in status.
      if (known === undefined) {
        out.reject(`${where}: unknown platformType ${JSON.stringify(platform)}`);
        continue;
      }
      candidate.platformType = known;
    }
    out.add(candidate, where);
  }
  return out.result();
}
