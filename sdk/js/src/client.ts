// createPortico: the client of Portico's SDK surface (catalog search, connect sessions and connect(), the
// app-user lifecycle probe, the observation gateway), typed by the API's own OpenAPI document.
import {
  connect,
  initiateConnect,
  type ConnectOutcome,
  type ConnectParams,
  type ConnectSession,
  type InitiateConnectParams,
} from './connect.js';
import { PorticoError } from './errors.js';
import { createTransport, dataOf, type FetchLike } from './http.js';
import { watchLifecycle, type LifecycleWatch, type WatchLifecycleOptions } from './lifecycle.js';
import {
  searchObservations,
  searchObservationsPage,
  type CallOptions,
  type Observation,
  type ObservationPage,
  type ObservationSearchParams,
} from './observations.js';
import {
  everything,
  searchRecords,
  searchRecordsPage,
  type FhirResource,
  type RecordPage,
  type RecordSearchParams,
} from './records.js';
import type { operations } from './schema.js';
import { realSleep, type Sleep } from './time.js';

type Brands = operations['searchBrands'];
export type BrandSearchParams = NonNullable<Brands['parameters']['query']>;
export type BrandSearchResult = Brands['responses'][200]['content']['application/json'];
export type Brand = BrandSearchResult['brands'][number];

export interface PorticoOptions {
  /** The API's origin (and path prefix, if any), e.g. `https://portico.example.com`. */
  baseUrl: string;
  /**
   * The app's publishable key (`pk_…`): connect sessions and the lifecycle probe. Safe in a browser: alone it
   * cannot start a patient's sign-in, which also takes a link token from your backend.
   */
  publishableKey?: string;
  /**
   * The app's secret key (`ak_…`) for the observation gateway. Server side only: refused in a browser unless
   * `allowSecretKeyInBrowser` is set.
   */
  appKey?: string;
  allowSecretKeyInBrowser?: boolean;
  /** Default: the global fetch. */
  fetch?: FetchLike;
  /** How the SDK waits between polls (default: timers); tests pass their own. */
  sleep?: Sleep;
  /** Milliseconds since the epoch (default: Date.now). */
  now?: () => number;
}

export interface Portico {
  searchBrands(params?: BrandSearchParams, options?: CallOptions): Promise<BrandSearchResult>;
  /** `POST /connect-sessions`; with `redirectUri` it also needs the `linkToken` your backend minted. */
  initiateConnect(
    params: InitiateConnectParams,
    options?: CallOptions & { idempotencyKey?: string },
  ): Promise<ConnectSession>;
  /**
   * Initiates with the link token your backend minted, then opens `authorizeUrl` in a popup and resolves with the
   * outcome once it comes back. Rejects with a PorticoError when the initiate is refused (the popup closes).
   */
  connect(params: ConnectParams & { mode: 'popup' }): Promise<ConnectOutcome>;
  /**
   * Initiates with the link token your backend minted, then sends this page to `authorizeUrl`; the page at
   * redirectUri calls readConnectOutcome().
   */
  connect(params: ConnectParams & { mode: 'redirect' }): Promise<{ status: 'redirected'; sessionId: string }>;
  watchLifecycle(appUserId: string, options: WatchLifecycleOptions): LifecycleWatch;
  searchObservationsPage(params: ObservationSearchParams, options?: CallOptions): Promise<ObservationPage>;
  searchObservations(params: ObservationSearchParams, options?: CallOptions): AsyncGenerator<Observation, void>;
  /** One page of a search of any record type on the connection's FHIR base (FHIR search parameters). */
  searchRecordsPage(
    connectionId: string,
    type: string,
    params?: RecordSearchParams,
    options?: CallOptions,
  ): Promise<RecordPage>;
  /** Every match of a search of any record type, page after page. */
  searchRecords(
    connectionId: string,
    type: string,
    params?: RecordSearchParams,
    options?: CallOptions,
  ): AsyncGenerator<FhirResource, void>;
  /** The patient's whole record (`$everything`), page after page. */
  everything(
    connectionId: string,
    patientId: string,
    params?: { _since?: string; _type?: string; _count?: number },
    options?: CallOptions,
  ): AsyncGenerator<FhirResource, void>;
}

export function createPortico(options: PorticoOptions): Portico {
  const { baseUrl, publishableKey, appKey, fetch, sleep = realSleep, now = Date.now } = options;
  if (appKey !== undefined && !options.allowSecretKeyInBrowser && 'document' in globalThis)
    throw new PorticoError({
      status: 0,
      code: 'SECRET_KEY_IN_BROWSER',
      detail: 'appKey (ak_…) is a server-side secret: do not ship it to browsers',
      retryable: false,
    });
  const transport = createTransport({ baseUrl, publishableKey, appKey, fetch });
  return {
    searchBrands: (params = {}, { signal } = {}) =>
      dataOf(
        transport.anonymous.GET('/api/sdk/v1/catalog/brands', { params: { query: params }, ...(signal && { signal }) }),
      ),
    initiateConnect: (params, callOptions) => initiateConnect(transport, params, callOptions),
    connect: ((params: ConnectParams) =>
      connect(transport, { sleep, now, origin: new URL(baseUrl).origin }, params)) as Portico['connect'],
    watchLifecycle: (appUserId, watchOptions) => watchLifecycle(transport, sleep, appUserId, watchOptions),
    searchObservationsPage: (params, callOptions) => searchObservationsPage(transport, params, callOptions),
    searchObservations: (params, callOptions) => searchObservations(transport, params, callOptions),
    searchRecordsPage: (connectionId, type, params, callOptions) =>
      searchRecordsPage(transport, connectionId, type, params, callOptions),
    searchRecords: (connectionId, type, params, callOptions) =>
      searchRecords(transport, connectionId, type, params, callOptions),
    everything: (connectionId, patientId, params, callOptions) =>
      everything(transport, connectionId, patientId, params, callOptions),
  };
}
