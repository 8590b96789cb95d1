import { PRIVATE_NO_CACHE } from '../../shared/http/caching.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { principalOf, requireScope } from '../../shared/http/auth.js';
import { IF_NONE_MATCH, ifMatch, preconditionOf, strongEtag } from '../../shared/http/conditional.js';
import { IdParams } from '../../shared/http/schemas.js';
import { validate } from '../../shared/http/validate.js';
import { presentPatient } from './presenter.js';
import { patientAnswer } from './answer.js';
import { CreatePatient, Patient } from './schema.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import type { PatientService } from './service.js';

const tags = ['Patients'];

export function patientRoutes(
  api: ApiRouter,
  { patients, idempotent, link }: { patients: PatientService } & Pick<RouteGuards, 'idempotent' | 'link'>,
): void {
  const create = validate({ body: CreatePatient });
  api.post(
    '/patients',
    {
      operationId: 'createPatient',
      summary: 'Create a patient profile',
      tags,
      responses: {
        201: { description: 'Created; emits `patient.created`.', schema: Patient, headers: ['ETag', 'Location'] },
      },
    },
    requireScope('patient:write'),
    create,
    idempotent(),
    async (ctx) => {
      const patient = await patients.create(principalOf(ctx), create.get(ctx).body);
      ctx.status = 201;
      ctx.set('Location', link(`/api/platform/v1/patients/${patient.id}`));
      ctx.set('ETag', strongEtag(patient.version));
      ctx.set(PRIVATE_NO_CACHE);
      ctx.body = presentPatient(patient, link);
    },
  );

  const byId = validate({ params: IdParams });
  api.get(
    '/patients/:id',
    {
      operationId: 'getPatient',
      summary: 'Get a patient profile',
      description:
        "Checks, in order: scope `patient:read`; the relation-tuple check; tenant membership; a tenant-filtered read. Failures of the first three are one uniform 403 `PLATFORM_ACCESS_DENIED` whether the id is unknown, malformed or another tenant's; an authorized patient that is absent (e.g. deleted) is 404.",
      tags,
      requestHeaders: [IF_NONE_MATCH],
      responses: {
        200: { description: 'The profile.', schema: Patient, headers: ['ETag', 'Cache-Control', 'Vary'] },
        304: { description: 'Not modified (If-None-Match matched, weak comparison).' },
      },
    },
    requireScope('patient:read'),
    byId,
    async (ctx) => {
      const answer = await patientAnswer(
        patients,
        principalOf(ctx),
        byId.get(ctx).params.id,
        ctx.get('If-None-Match') || undefined,
        link,
      );
      ctx.set(answer.headers);
      ctx.status = answer.status;
      ctx.body = answer.status === 304 ? null : answer.body;
    },
  );

  api.delete(
    '/patients/:id',
    {
      operationId: 'deletePatient',
      summary: 'Delete a patient profile (soft)',
      description:
        'Authorized like the read (uniform 403), then existence (404), then If-Match (412). Emits `patient.deleted`. Deleting again → 404.',
      tags,
      responses: { 204: { description: 'Deleted.' } },
    },
    requireScope('patient:write'),
    byId,
    ifMatch(),
    idempotent(),
    async (ctx) => {
      await patients.delete(principalOf(ctx), byId.get(ctx).params.id, preconditionOf(ctx));
      ctx.status = 204;
    },
  );
}
