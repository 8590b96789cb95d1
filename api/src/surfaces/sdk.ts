import type { Middleware } from 'koa';
import type { AppUserService } from '../features/app-users/service.js';
import type { Surface } from '../shared/http/auth.js';
import type { OperationPatch } from '../shared/http/openapi.js';
import type { ConnectSessionService } from '../features/connect-sessions/service.js';
import type { GatewayService } from '../features/clinical/gateway/service.js';

type Documented = Middleware & { openapi: OperationPatch };

/** What the SDK surface's credentialed routes are given (the catalog is public and takes its own). */
export interface SdkContext {
  sessions: ConnectSessionService;
  users: AppUserService;
  requireKey: (surface: Surface) => Documented;
  idempotent: () => Documented;
  gateway: GatewayService;
  publicBaseUrl: string | undefined;
  trustProxy: boolean;
}
