import { Type, type Static } from '@sinclair/typebox';
import { Timestamp } from '../../shared/http/schemas.js';
import { AppUserId } from '../app-users/index.js';

export const InitiateSession = Type.Object(
  {
    appUserId: AppUserId,
    brandId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          'A brand of the catalog (`GET /catalog/brands`). Without it (and with `redirectUri`), `authorizeUrl` opens Portico Connect, the hosted page where the patient finds their health system.',
      }),
    ),
    redirectUri: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description:
          "Where the patient's browser returns after signing in at the health system: one of the app's `redirectUris`. With it, and a brand Portico holds a client registration for, the answer carries `authorizeUrl`.",
      }),
    ),
    connectionId: Type.Optional(
      Type.String({
        format: 'uuid',
        description:
          'Reconnect: a connection of this app user and brand in `REAUTHORIZATION_REQUIRED`. The sign-in renews its tokens and the connection keeps its id. Needs `redirectUri`.',
      }),
    ),
  },
  { additionalProperties: false, examples: [{ appUserId: 'user-8f3a2c', brandId: 'b-4kq9xw2m' }] },
);
export type InitiateSession = Static<typeof InitiateSession>;

export const Session = Type.Object({
  id: Type.String({ format: 'uuid' }),
  appUserId: AppUserId,
  brandId: Type.Union([Type.String(), Type.Null()], {
    description: 'null until the patient chooses one in Portico Connect.',
  }),
  status: Type.Literal('PENDING'),
  expiresAt: Timestamp,
  authorizeUrl: Type.Optional(
    Type.String({
      format: 'uri',
      description:
        "Open it in the patient's browser: it leads to the health system's sign-in, then back to `redirectUri` with `session`, `status` (`connected` or `failed`) and `connectionId` or `error`. Single use; given only with `redirectUri`.",
    }),
  ),
});

export const SessionParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

export const CompletedSession = Type.Object({
  connection: Type.Object({
    id: Type.String({ format: 'uuid' }),
    appUserId: AppUserId,
    appId: Type.String({ format: 'uuid' }),
    brandId: Type.String(),
    createdAt: Timestamp,
  }),
});
