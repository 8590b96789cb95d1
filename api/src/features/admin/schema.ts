import { RECORD_TYPES } from '../clinical/index.js';
import { Type, type Static } from '@sinclair/typebox';
import { Text } from '../../shared/http/schemas.js';
import { PLATFORM_SCOPES } from '../../shared/http/scopes.js';

export const AccountParams = Type.Object({ id: Type.String({ maxLength: 1024 }) });
export const AppParams = Type.Object({ id: Type.String({ maxLength: 1024 }) });
export const KeyParams = Type.Object({ keyId: Type.String({ maxLength: 1024 }) });

export const CreateAccount = Type.Object({ name: Text(1, 200) }, { additionalProperties: false });
export const Account = Type.Object({ id: Type.String({ format: 'uuid' }), name: Type.String() });
export const AccountStatus = Type.Union([Type.Literal('ACTIVE'), Type.Literal('SUSPENDED')]);
export const UpdateAccount = Type.Object({ status: AccountStatus }, { additionalProperties: false });
export const AccountWithStatus = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  status: AccountStatus,
});

export const CreateKey = Type.Object(
  {
    scopes: Type.Array(Type.Union(PLATFORM_SCOPES.map((s) => Type.Literal(s))), { minItems: 1, uniqueItems: true }),
    name: Type.Optional(Text(1, 200)),
  },
  { additionalProperties: false },
);
export type CreateKey = Static<typeof CreateKey>;
export const IssuedKey = Type.Object({
  id: Type.String({ format: 'uuid' }),
  key: Type.String({ pattern: '^sk_', description: 'The secret key; shown only in this response.' }),
  scopes: Type.Array(Type.String()),
});

export const Grants = Type.Object(
  {
    resourceTypes: Type.Union(
      [
        Type.Array(Type.Literal('*'), { minItems: 1, maxItems: 1 }),
        Type.Array(Type.Union(RECORD_TYPES.map((type) => Type.Literal(type))), { uniqueItems: true }),
      ],
      { description: '`["*"]` for every record type, else the record types the install may read.' },
    ),
    loincCodes: Type.Union(
      [
        Type.Array(Type.Literal('*'), { minItems: 1, maxItems: 1 }),
        Type.Array(Type.String({ pattern: '^[0-9]{1,7}-[0-9]$' }), { uniqueItems: true, maxItems: 1000 }),
      ],
      {
        description: '`["*"]` for every LOINC code, else the codes the install may read.',
      },
    ),
    confidentiality: Type.Array(Type.Union(['U', 'L', 'M', 'N', 'R', 'V'].map((c) => Type.Literal(c))), {
      uniqueItems: true,
      description: 'v3-Confidentiality codes the install may see.',
    }),
    sensitivity: Type.Array(Type.String({ pattern: '^[A-Z][A-Z0-9]{1,15}$' }), {
      uniqueItems: true,
      maxItems: 100,
      description: 'v3-ActCode sensitivity codes (HIV, PSY, ETH, SUD, …) the install may see.',
    }),
    lookbackDays: Type.Union([Type.Null(), Type.Integer({ minimum: 1, maximum: 36500 })], {
      description: '`null` for no limit.',
    }),
  },
  { additionalProperties: false },
);
export type Grants = Static<typeof Grants>;

export const AppStatus = Type.Union([Type.Literal('ACTIVE'), Type.Literal('SUSPENDED')]);
export const RedirectUris = Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
  maxItems: 10,
  uniqueItems: true,
  description:
    'Where a connect session may send the patient back after signing in at their health system: `https:` URLs, or `http:` ones on `localhost` or `127.0.0.1` (development); no fragment. At most 10.',
  examples: [['https://app.example.com/connected']],
});
export const CreateApp = Type.Object(
  { name: Text(1, 200), grants: Grants, redirectUris: Type.Optional(RedirectUris) },
  { additionalProperties: false },
);
export const UpdateApp = Type.Object(
  { status: Type.Optional(AppStatus), grants: Type.Optional(Grants), redirectUris: Type.Optional(RedirectUris) },
  { additionalProperties: false },
);
export const App = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  grants: Grants,
  status: AppStatus,
  redirectUris: RedirectUris,
});
export const CreatedApp = Type.Intersect([
  App,
  Type.Object({
    publishableKey: Type.String({ pattern: '^pk_', description: 'For client apps (SDK surface); shown only here.' }),
    publishableKeyId: Type.String({
      format: 'uuid',
      description: 'Id of the publishable key, for `DELETE /api-keys/{keyId}`.',
    }),
    secretKey: Type.String({ pattern: '^ak_', description: 'For the observation gateway; shown only here.' }),
    secretKeyId: Type.String({
      format: 'uuid',
      description: 'Id of the secret app key, for `DELETE /api-keys/{keyId}`.',
    }),
  }),
]);

/** `limit` and `cursor` of the admin lists (newest first). */
export const AdminListQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'Page size, 1-100; else 400.' }),
  cursor: Type.Optional(
    Type.String({ maxLength: 1024, description: 'Opaque `pagination.nextCursor` of the previous page, unchanged.' }),
  ),
});
const Pagination = Type.Object({ nextCursor: Type.Union([Type.String(), Type.Null()]), hasMore: Type.Boolean() });
const Timestamp = Type.String({ format: 'date-time' });
export const AccountList = Type.Object({
  data: Type.Array(
    Type.Object({
      id: Type.String({ format: 'uuid' }),
      name: Type.String(),
      status: AccountStatus,
      createdAt: Timestamp,
    }),
  ),
  pagination: Pagination,
});
export const AppList = Type.Object({ data: Type.Array(App), pagination: Pagination });
export const KeyList = Type.Object({
  data: Type.Array(
    Type.Object({
      id: Type.String({ format: 'uuid', description: 'The key id (for `DELETE /api-keys/{keyId}`); never the key.' }),
      kind: Type.Union([Type.Literal('sk'), Type.Literal('pk'), Type.Literal('ak')]),
      appId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'The app of a pk_ or ak_.' }),
      name: Type.Union([Type.String(), Type.Null()]),
      scopes: Type.Array(Type.String()),
      createdAt: Timestamp,
      revokedAt: Type.Union([Timestamp, Type.Null()]),
    }),
  ),
  pagination: Pagination,
});
