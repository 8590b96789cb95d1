import type { Middleware } from 'koa';
import type { AppUserService } from '../app-users/service.js';
import type { Surface } from '../http/auth.js';
import type { OperationPatch } from '../http/openapi.js';
import type { ConnectSessionService } from './connect-sessions/service.js';
import type { GatewayService } from './observations/service.js';

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
