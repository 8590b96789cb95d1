// The observation gateway (POST/GET /api/sdk/v1/observations/_search): one page, or every observation across
// pages by following each page's `next` link. It takes the app's secret key (ak_…): server side only.
import { dataOf, type Transport } from './http.js';
import type { operations } from './schema.js';

type Search = operations['searchObservations'];
export type ObservationSearchParams = Search['requestBody']['content']['application/json'];
export type ObservationBundle = Search['responses'][200]['content']['application/fhir+json'];
export type Observation = ObservationBundle['entry'][number]['resource'];

export interface ObservationPage {
  bundle: ObservationBundle;
  observations: Observation[];
  /** Every observation the key may see that matches, not only this page's. */
  total: number;
  /** The cursor of the `next` link; undefined on the last page. */
  nextCursor: string | undefined;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/** One page: the search `params` (or `{connectionId, cursor}` to continue one). */
export async function searchObservationsPage(
  transport: Transport,
  params: ObservationSearchParams,
  { signal }: CallOptions = {},
): Promise<ObservationPage> {
  const bundle = await dataOf(
    transport.app().POST('/api/sdk/v1/observations/_search', { body: params, ...(signal && { signal }) }),
  );
  return pageOf(bundle);
}

/** Every observation of the search, page after page (each page is read when the previous one is used up). */
export async function* searchObservations(
  transport: Transport,
  params: ObservationSearchParams,
  { signal }: CallOptions = {},
): AsyncGenerator<Observation, void, undefined> {
  let page = await searchObservationsPage(transport, params, { ...(signal && { signal }) });
  for (;;) {
    yield* page.observations;
    if (page.nextCursor === undefined) return;
    // The `next` link's cursor carries the connection and every parameter; it is read through this client's
    // base URL, which need not be the one the API writes its links with (PUBLIC_BASE_URL).
    const bundle = await dataOf(
      transport.app().GET('/api/sdk/v1/observations/_search', {
        params: { query: { cursor: page.nextCursor } },
        ...(signal && { signal }),
      }),
    );
    page = pageOf(bundle);
  }
}

function pageOf(bundle: ObservationBundle): ObservationPage {
  const next = bundle.link.find((link) => link.relation === 'next');
  const cursor = next === undefined ? null : new URL(next.url, 'http://base.invalid').searchParams.get('cursor');
  return {
    bundle,
    observations: bundle.entry.map((entry) => entry.resource),
    total: bundle.total,
    nextCursor: cursor ?? undefined,
  };
}
