// The whole record on a connection's FHIR base (/api/sdk/v1/fhir/connections/{id}): a search of any record type, one
// page or every match across pages (following each page's `next` link by its `_cursor`), and the patient's
// `$everything`. It takes the app's secret key (ak_…): server side only.
import { dataOf, type Transport } from './http.js';
import type { operations } from './schema.js';
import type { CallOptions } from './observations.js';

type Search = operations['fhirSearchRecords'];
export type RecordBundle = Search['responses'][200]['content']['application/fhir+json; charset=utf-8'] & {
  total?: number;
  link: { relation: string; url: string }[];
  entry?: { fullUrl: string; resource: FhirResource; search: { mode: 'match' | 'include' } }[];
};
/** A FHIR resource as the health system sent it (its type's own elements). */
export type FhirResource = { resourceType: string; id: string } & Record<string, unknown>;
/** FHIR search parameters: a name (with its modifier) and a value, or several values (AND). */
export type RecordSearchParams = Record<string, string | string[]>;

export interface RecordPage {
  bundle: RecordBundle;
  /** The page's matches. */
  resources: FhirResource[];
  /** What `_include` and `_revinclude` brought in. */
  included: FhirResource[];
  /** Every match the key may see (absent with `_total=none`). */
  total: number | undefined;
  /** The cursor of the `next` link; undefined on the last page. */
  nextCursor: string | undefined;
  /** The parameter the cursor goes back in (`_cursor`, or `cursor` on the observation gateway's own search). */
  cursorParameter: '_cursor' | 'cursor';
}

/** One page of a search of `type` on the connection (`{_cursor}` continues one). */
export async function searchRecordsPage(
  transport: Transport,
  connectionId: string,
  type: string,
  params: RecordSearchParams = {},
  { signal }: CallOptions = {},
): Promise<RecordPage> {
  const bundle = await dataOf(
    transport.app().GET('/api/sdk/v1/fhir/connections/{connectionId}/{type}', {
      params: { path: { connectionId, type }, query: params as never },
      ...(signal && { signal }),
    }),
  );
  return pageOf(bundle as RecordBundle);
}

/** Every match of the search, page after page (each page is read when the previous one is used up). */
export async function* searchRecords(
  transport: Transport,
  connectionId: string,
  type: string,
  params: RecordSearchParams = {},
  { signal }: CallOptions = {},
): AsyncGenerator<FhirResource, void, undefined> {
  let page = await searchRecordsPage(transport, connectionId, type, params, { ...(signal && { signal }) });
  for (;;) {
    yield* page.resources;
    if (page.nextCursor === undefined) return;
    page = await searchRecordsPage(
      transport,
      connectionId,
      type,
      { [page.cursorParameter]: page.nextCursor },
      {
        ...(signal && { signal }),
      },
    );
  }
}

/** The patient's whole record (`Patient/{id}/$everything`, `_count` 100 unless given), page after page. */
export async function* everything(
  transport: Transport,
  connectionId: string,
  patientId: string,
  params: { _since?: string; _type?: string; _count?: number } = {},
  { signal }: CallOptions = {},
): AsyncGenerator<FhirResource, void, undefined> {
  let query: Record<string, string> = Object.fromEntries(
    Object.entries({ _count: 100, ...params }).map(([name, value]) => [name, String(value)]),
  );
  for (;;) {
    const bundle = (await dataOf(
      transport.app().GET('/api/sdk/v1/fhir/connections/{connectionId}/Patient/{id}/$everything', {
        params: { path: { connectionId, id: patientId }, query: query as never },
        ...(signal && { signal }),
      }),
    )) as RecordBundle;
    const page = pageOf(bundle);
    yield* page.resources;
    if (page.nextCursor === undefined) return;
    query = { [page.cursorParameter]: page.nextCursor };
  }
}

function pageOf(bundle: RecordBundle): RecordPage {
  const next = bundle.link.find((link) => link.relation === 'next');
  const query = next === undefined ? null : new URL(next.url, 'http://base.invalid').searchParams;
  // A record search's links carry `_cursor`; an Observation search with the gateway's own parameters, `cursor`.
  const cursor = query?.get('_cursor') ?? query?.get('cursor') ?? null;
  const name = query?.has('_cursor') ? '_cursor' : 'cursor';
  const entries = bundle.entry ?? [];
  return {
    bundle,
    resources: entries.filter((e) => e.search.mode === 'match').map((e) => e.resource),
    included: entries.filter((e) => e.search.mode === 'include').map((e) => e.resource),
    total: bundle.total,
    nextCursor: cursor ?? undefined,
    cursorParameter: name,
  };
}
