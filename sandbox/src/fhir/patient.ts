// Patient read: the token's own patient only. Another id is a 403 whether it exists or not, so a token cannot
// be used to learn which patients this server has.
import type { Context } from 'koa';
import { allows } from '../oauth/scopes.js';
import type { World } from '../world.js';
import { bearer } from './access.js';
import { sendOutcome } from './outcome.js';

/** The patient of a whole record (fhir/record-store.ts): the token's own only, as readPatient. */
export function readOwnPatient(world: World, brandKey: string, ctx: Context, id: string): void {
  const token = bearer(world, brandKey, ctx);
  if (!token) return;
  if (!allows(token.family.scope, 'Patient', 'r'))
    return sendOutcome(ctx, 403, 'the granted scope does not allow Patient read');
  if (id !== token.family.patientId) return sendOutcome(ctx, 403, 'this token is for another patient');
  ctx.type = 'application/fhir+json';
  ctx.body = world.records.read(brandKey, 'Patient', id);
}

export function readPatient(world: World, brandKey: string, ctx: Context, id: string): void {
  const token = bearer(world, brandKey, ctx);
  if (!token) return;
  if (!allows(token.family.scope, 'Patient', 'r'))
    return sendOutcome(ctx, 403, 'the granted scope does not allow Patient read');
  const patient = world.patients.find((p) => p.id === token.family.patientId);
  if (id !== token.family.patientId || !patient) return sendOutcome(ctx, 403, 'this token is for another patient');
  const parts = patient.name.split(' ');
  ctx.type = 'application/fhir+json';
  ctx.body = {
    resourceType: 'Patient',
    id: patient.id,
    meta: { versionId: '1', lastUpdated: '2024-01-01T00:00:00.000Z' },
    active: true,
    name: [{ use: 'official', text: patient.name, family: parts.at(-1), given: parts.slice(0, -1) }],
    birthDate: patient.birthDate,
  };
}
