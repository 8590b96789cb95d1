// Factories make unique, valid data; tests override only what they are about.
import { randomUUID } from 'node:crypto';

let sequence = 0;
const unique = () => `${++sequence}${randomUUID().slice(0, 6)}`;

export function buildPatient(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const n = unique();
  return {
    givenName: `Given${n}`,
    familyName: `Family${n}`,
    birthDate: '1984-02-29',
    sex: 'female',
    email: `patient${n}@example.org`,
    phoneNumber: '+14155550123',
    preferredLanguage: 'es-MX',
    ...overrides,
  };
}

export function buildEndpoint(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    url: `https://hooks-${unique()}.example.test/portico`,
    eventTypes: ['patient.created', 'patient.deleted'],
    description: 'Test endpoint',
    ...overrides,
  };
}
