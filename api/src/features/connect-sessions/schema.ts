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
          'Reconnect: a connection of this app user and brand in `REAUTHORIZATION_REQUIRED`. The sign-in renews its tokens and the connection keeps its id. Needs `redirectUri` and a link token that binds this connection.',
      }),
    ),
    linkToken: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          'Required with `redirectUri`: the `linkToken` your backend minted for this app user with `POST /api/platform/v1/link-tokens` (single use, 30 minutes). `appUserId`, `redirectUri`, `connectionId` and (when the token names one) `brandId` must be what it binds, else 400 `LINK_TOKEN_MISMATCH`; an unknown, used or expired token is 400 `LINK_TOKEN_INVALID`. Neither takes a rate-limit token. Not accepted without `redirectUri`.',
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

export const MintLinkToken = Type.Object(
  {
    appUserId: AppUserId,
    appId: Type.String({ format: 'uuid', description: 'The app whose publishable key will initiate the session.' }),
    redirectUri: Type.String({
      minLength: 1,
      maxLength: 2048,
      description: "Where the patient's browser returns: one of the app's `redirectUris`.",
    }),
    brandId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          'Binds the session to this brand. Without it the app (or the patient, in Portico Connect) chooses the brand.',
      }),
    ),
    connectionId: Type.Optional(
      Type.String({
        format: 'uuid',
        description:
          "Binds the session to reconnecting this connection of the app user (in `REAUTHORIZATION_REQUIRED`); needs `brandId`, the connection's brand.",
      }),
    ),
  },
  {
    additionalProperties: false,
    examples: [
      {
        appUserId: 'user-8f3a2c',
        appId: '0b6f3c1e-4f6a-4d8e-9a51-2f7d9e3b5c10',
        redirectUri: 'https://app.example.com/connected',
      },
    ],
  },
);
export type MintLinkToken = Static<typeof MintLinkToken>;

export const LinkTokenCreated = Type.Object({
  linkToken: Type.String({
    pattern: '^lt_[0-9A-Za-z]{32,128}$',
    description: 'Opaque; hand it to the app in the browser, which passes it to the initiate. Shown once.',
  }),
  expiresAt: Timestamp,
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
