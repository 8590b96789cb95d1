import { Type } from '@sinclair/typebox';
import { APP_USER_ID } from '../../shared/http/ids.js';
import { NullableTimestamp, Timestamp } from '../../shared/http/schemas.js';

/** docs/api.md, "Connecting a patient's health system": 1–128 characters from [A-Za-z0-9._:@-]. */
export const AppUserId = Type.String({
  pattern: APP_USER_ID.source,
  description: "Your app's own id for the user (1–128 of `A-Z a-z 0-9 . _ : @ -`).",
  examples: ['user-8f3a2c'],
});

export const LifecycleState = Type.Union(
  ['UNLINKED', 'LIMITED', 'ACTIVE', 'TOMBSTONED'].map((s) => Type.Literal(s)),
  {
    description:
      'UNLINKED (never seen) → LIMITED (first initiate) → ACTIVE (first connection) → LIMITED (last connection revoked); any → TOMBSTONED (terminal).',
  },
);

export const AppUserParams = Type.Object({ appUserId: AppUserId });
export const ConnectionParams = Type.Object({ connectionId: Type.String({ maxLength: 64 }) });

export const SyncView = Type.Object(
  {
    status: Type.Union([Type.Literal('IDLE'), Type.Literal('RUNNING'), Type.Literal('FAILED')]),
    lastSyncedAt: NullableTimestamp,
    lastError: Type.Union([Type.String(), Type.Null()], {
      description:
        'Why the last sync failed: `reauthorization_required`, `unauthorized`, `rate_limited`, `unavailable`, `refused_address`, `next_link_refused`, `invalid_response`, `token_refresh_failed`, `token_key_missing` (the key that sealed the tokens is no longer in PORTICO_TOKEN_KEYS: put it back), `takeover_limit` (its replica died three times without progress), `internal_error` or `http_<status>`.',
    }),
    observations: Type.Integer({
      minimum: 0,
      description: 'Observations the syncs have added in all, less those full runs removed.',
    }),
    skipped: Type.Integer({
      minimum: 0,
      description:
        "Records the last finished sync skipped because they failed ingest's checks (a resource over 1 MiB among them).",
    }),
    foreignPatient: Type.Integer({
      minimum: 0,
      description:
        "Records the last finished sync skipped because they are another patient's than the connection's (never stored).",
    }),
    resources: Type.Integer({
      minimum: 0,
      description: 'Records of every type the syncs have added in all, less those full runs removed.',
    }),
    types: Type.Record(
      Type.String(),
      Type.Object({
        count: Type.Integer({
          minimum: 0,
          description: 'Records of the type the syncs have added in all, less those full runs removed.',
        }),
        status: Type.Union([Type.Literal('SYNCED'), Type.Literal('SKIPPED'), Type.Literal('FAILED')], {
          description:
            'After the last finished run: `SKIPPED` when the health system refused its search (`httpStatus`: 400, 403, 404 or 501), the run going on with the other types.',
        }),
        httpStatus: Type.Optional(Type.Integer()),
        invalid: Type.Integer({ minimum: 0, description: 'Skipped as invalid in the last run.' }),
        foreignPatient: Type.Integer({ minimum: 0, description: "Skipped as another patient's in the last run." }),
      }),
      { description: 'Per record type the connection syncs (docs/connecting.md, "Sync").' },
    ),
  },
  { description: "Where the connection's sync from its health system stands." },
);

export const ConnectionView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  appId: Type.String({ format: 'uuid' }),
  brandId: Type.String(),
  createdAt: Timestamp,
  status: Type.Union([Type.Literal('ACTIVE'), Type.Literal('REAUTHORIZATION_REQUIRED')], {
    description:
      '`REAUTHORIZATION_REQUIRED` when Portico no longer holds a usable grant (see `statusReason`): initiate with `connectionId` (and a link token binding it) to reconnect. Revoked connections are not listed.',
  }),
  statusReason: Type.Optional(
    Type.Union([Type.Literal('invalid_grant'), Type.Literal('patient_mismatch'), Type.Literal('token_unreadable')], {
      description:
        'With `REAUTHORIZATION_REQUIRED`: `invalid_grant` (the health system refused the grant), `patient_mismatch` (a token response named another patient: its tokens were deleted), `token_unreadable` (the stored tokens do not open for this connection: deleted).',
    }),
  ),
  fhirBaseUrl: Type.Optional(
    Type.String({ description: 'For a connection made by signing in: where its records come from.' }),
  ),
  patient: Type.Optional(Type.String({ description: "The health system's own id of the patient." })),
  scope: Type.Optional(Type.String({ description: 'What the health system granted.' })),
  sync: Type.Optional(SyncView),
});

export const AppUserView = Type.Object(
  {
    appUserId: AppUserId,
    state: LifecycleState,
    connections: Type.Array(ConnectionView, { description: 'Live connections, oldest first.' }),
    createdAt: NullableTimestamp,
    updatedAt: NullableTimestamp,
    _version: Type.String({
      pattern: '^[0-9]+$',
      description: '"0" for a user never seen (UNLINKED), else as for every resource.',
    }),
  },
  {
    examples: [
      {
        appUserId: 'user-8f3a2c',
        state: 'ACTIVE',
        connections: [
          {
            id: '0193a0c4-7b1e-7c1a-9d2e-3f4a5b6c7d8e',
            appId: '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
            brandId: 'b-4kq9xw2m',
            createdAt: '2026-11-22T10:00:00.000Z',
            status: 'ACTIVE',
          },
        ],
        createdAt: '2026-11-22T09:58:00.000Z',
        updatedAt: '2026-11-22T10:00:00.000Z',
        _version: '2',
      },
    ],
  },
);
