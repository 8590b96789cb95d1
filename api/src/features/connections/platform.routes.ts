// Connections on the platform surface: revoke one (docs/api.md), ask for a signed-in connection's sync
// (docs/connecting.md, "Sync"). Two functions, so the surface mounts each where /openapi.json lists it.
import { Type } from '@sinclair/typebox';
import { principalOf, requireScope } from '../../shared/http/auth.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import { validate } from '../../shared/http/validate.js';
import { notFound } from '../../shared/http/errors.js';
import { UUID } from '../../shared/http/ids.js';
import { ConnectionParams, presentSync, SyncView } from '../app-users/index.js';
import type { ConnectionService } from './lifecycle.js';
import type { SyncRunner } from './sync/runner.js';
import type { SyncRequests } from './sync/requests.js';

export function revokeConnectionRoute(
  api: ApiRouter,
  { connections, idempotent }: { connections: Pick<ConnectionService, 'revoke'> } & Pick<RouteGuards, 'idempotent'>,
): void {
  const connection = validate({ params: ConnectionParams });
  api.delete(
    '/connections/:connectionId',
    {
      operationId: 'revokeConnection',
      summary: 'Revoke one connection',
      description:
        "Emits `connection.revoked`; when it was the user's last live connection the user moves ACTIVE → LIMITED (emits `app_user.limited`). An absent, already revoked or another account's connection is 404.",
      tags: ['App users'],
      responses: { 204: { description: 'Revoked.' } },
    },
    requireScope('app_user:write'),
    connection,
    idempotent(),
    async (ctx) => {
      const id = connection.get(ctx).params.connectionId;
      if (!UUID.test(id) || !(await connections.revoke(principalOf(ctx).accountId, id))) throw notFound('connection');
      ctx.status = 204;
    },
  );
}

const SyncAccepted = Type.Object({ connectionId: Type.String({ format: 'uuid' }), sync: SyncView });
const SyncRequest = Type.Object(
  {
    full: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          "A full run: every type is read whole (no `_lastUpdated`), and a type read whole by its plain search without a refusal or an invalid resource loses the connection's stored records of that type that the health system no longer returned (not a type a registration searches by category, nor a referenced type). Asked while a run is under way, the next run is the full one; one that fails or pauses is asked for again.",
      }),
    ),
  },
  { additionalProperties: false },
);

export function syncRoutes(
  api: ApiRouter,
  {
    syncs,
    syncWorker,
    idempotent,
  }: { syncs: Pick<SyncRequests, 'request'>; syncWorker: Pick<SyncRunner, 'wake'> } & Pick<RouteGuards, 'idempotent'>,
): void {
  const connection = validate({ params: ConnectionParams, body: SyncRequest, bodyOptional: true });
  api.post(
    '/connections/:connectionId/sync',
    {
      operationId: 'syncConnection',
      summary: "Read a signed-in connection's records from its health system now",
      description:
        '202: the sync is due now and one replica starts it within a second or so; a sync already running goes on and is not started twice (this answers 202 too, once a minute has passed since it began). Within 60 s of the last run\'s start the answer is 429 `RATE_LIMITED` with `Retry-After`: no tenant can make Portico hammer a health system. A connection of a suspended app is 409 (its syncs pause until the app is active again). It ends with `connection.synced` or `connection.sync_failed`, and `GET /app-users/{id}` shows where it stands. A connection made by `complete` rather than by signing in is 409; an absent, revoked or another account\'s connection is 404. The body is optional: `{"full": true}` asks for a full run, which also removes what the health system no longer returns.',
      tags: ['App users'],
      responses: { 202: { description: 'Due now.', schema: SyncAccepted } },
    },
    requireScope('app_user:write'),
    connection,
    idempotent(),
    async (ctx) => {
      const { params, body } = connection.get(ctx);
      const { connectionId } = params;
      const state = await syncs.request(principalOf(ctx), connectionId, { full: body?.full === true });
      syncWorker.wake();
      ctx.status = 202;
      ctx.body = {
        connectionId,
        sync: presentSync(state),
      };
    },
  );
}
