import { Type, type Static } from '@sinclair/typebox';
import { APP_USER_ID } from '../../shared/http/ids.js';
import { Timestamp } from '../../shared/http/schemas.js';

/** docs/api.md, "Connecting a patient's health system": 1–128 characters from [A-Za-z0-9._:@-]. */
export const AppUserId = Type.String({ pattern: APP_USER_ID.source, description: "Your app's own id for the user (1–128 of `A-Z a-z 0-9 . _ : @ -`).", examples: ['user-8f3a2c'] });

export const InitiateSession = Type.Object(
  { appUserId: AppUserId, brandId: Type.String({ minLength: 1, maxLength: 64, description: 'A brand of the catalog (`GET /catalog/brands`).' }) },
  { additionalProperties: false, examples: [{ appUserId: 'user-8f3a2c', brandId: 'b-4kq9xw2m' }] },
);
export type InitiateSession = Static<typeof InitiateSession>;

export const Session = Type.Object({
  id: Type.String({ format: 'uuid' }),
  appUserId: AppUserId,
  brandId: Type.String(),
  status: Type.Literal('PENDING'),
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
