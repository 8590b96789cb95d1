import { Type, type Static } from '@sinclair/typebox';
import { Timestamp } from '../../shared/http/schemas.js';
import { AppUserId } from '../app-users/index.js';

export const InitiateSession = Type.Object(
  {
    appUserId: AppUserId,
    brandId: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'A brand of the catalog (`GET /catalog/brands`).',
    }),
  },
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
