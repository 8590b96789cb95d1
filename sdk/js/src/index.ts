// @portico/sdk: Portico's client for browsers and Node (README.md).
export { createPortico } from './client.js';
export type { Brand, BrandSearchParams, BrandSearchResult, Portico, PorticoOptions } from './client.js';
export { readConnectOutcome, POPUP_FEATURES, POPUP_NAME } from './connect.js';
export type {
  ConnectOutcome,
  ConnectParams,
  ConnectPopup,
  ConnectSession,
  ConnectWindow,
  InitiateConnectParams,
} from './connect.js';
export { PorticoError } from './errors.js';
export type { Problem } from './errors.js';
export type { FetchLike } from './http.js';
export { FINAL_STATE } from './lifecycle.js';
export type { LifecycleState, LifecycleWatch, WatchEnd, WatchLifecycleOptions } from './lifecycle.js';
export type {
  CallOptions,
  Observation,
  ObservationBundle,
  ObservationPage,
  ObservationSearchParams,
} from './observations.js';
export type { FhirResource, RecordBundle, RecordPage, RecordSearchParams } from './records.js';
export type { Sleep } from './time.js';
export type { components, operations, paths } from './schema.js';
