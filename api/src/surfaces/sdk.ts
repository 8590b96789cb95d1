// The SDK surface, /api/sdk/v1, for client apps: the public catalog, then the routes for publishable (pk_) and
// app secret (ak_) keys, each of which names the key it takes. It mounts each feature's SDK routes, in the order
// /openapi.json lists them.
import { lifecycleRoutes } from '../features/app-users/sdk.routes.js';
import { catalogRoutes } from '../features/catalog/sdk.routes.js';
import { fhirRoutes } from '../features/clinical/fhir.routes.js';
import { gatewayRoutes } from '../features/clinical/sdk.routes.js';
import { recordRoutes } from '../features/clinical/fhir-records.routes.js';
import { connectSessionRoutes } from '../features/connect-sessions/sdk.routes.js';
import { smartLaunchRoutes } from '../features/connections/sdk.routes.js';
import { portalRoutes } from '../features/portal/sdk.routes.js';
import { ApiRouter } from '../shared/http/openapi.js';

type DepsOf<F extends (router: ApiRouter, deps: never) => void> = Parameters<F>[1];

export type SdkContext = DepsOf<typeof catalogRoutes> &
  DepsOf<typeof connectSessionRoutes> &
  DepsOf<typeof lifecycleRoutes> &
  DepsOf<typeof gatewayRoutes> &
  DepsOf<typeof fhirRoutes> &
  DepsOf<typeof recordRoutes> &
  DepsOf<typeof smartLaunchRoutes> &
  DepsOf<typeof portalRoutes>;

export function sdkSurface(context: SdkContext): ApiRouter {
  const sdk = new ApiRouter('/api/sdk/v1');
  catalogRoutes(sdk, context);
  connectSessionRoutes(sdk, context);
  smartLaunchRoutes(sdk, context);
  portalRoutes(sdk, context);
  lifecycleRoutes(sdk, context);
  gatewayRoutes(sdk, context);
  fhirRoutes(sdk, context);
  recordRoutes(sdk, context);
  return sdk;
}
