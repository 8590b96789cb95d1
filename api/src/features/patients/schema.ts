import { Type, type Static } from '@sinclair/typebox';
import { Links, Text, Timestamp, Version } from '../../shared/http/schemas.js';

export const SEXES = ['male', 'female', 'other', 'unknown'] as const;

const Sex = Type.Union(
  SEXES.map((s) => Type.Literal(s)),
  { description: 'Administrative sex.' },
);
const BirthDate = Type.String({
  format: 'date',
  description: 'A valid calendar date `YYYY-MM-DD`, not in the future.',
});
const Email = Type.String({ format: 'email', maxLength: 254, description: 'RFC 5322 address.' });
const PhoneNumber = Type.String({ pattern: '^\\+[1-9][0-9]{1,14}$', description: 'E.164, e.g. `+14155550123`.' });
const Language = Type.String({
  maxLength: 35,
  pattern: '^[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?(-([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*$',
  description: 'BCP 47 language tag such as `en` or `es-MX`.',
});

export const CreatePatient = Type.Object(
  {
    givenName: Text(1, 100),
    familyName: Text(1, 100),
    birthDate: Type.Optional(BirthDate),
    sex: Type.Optional(Sex),
    email: Type.Optional(Email),
    phoneNumber: Type.Optional(PhoneNumber),
    preferredLanguage: Type.Optional(Language),
  },
  { additionalProperties: false, $id: 'CreatePatient' },
);
export type CreatePatient = Static<typeof CreatePatient>;

export const Patient = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    resourceType: Type.Literal('Patient'),
    givenName: Type.String(),
    familyName: Type.String(),
    birthDate: Type.Optional(BirthDate),
    sex: Type.Optional(Sex),
    email: Type.Optional(Email),
    phoneNumber: Type.Optional(PhoneNumber),
    preferredLanguage: Type.Optional(Language),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    _version: Version,
    _links: Links,
  },
  { description: 'Optional fields are absent when they were not given.' },
);
export type PatientView = Static<typeof Patient>;
