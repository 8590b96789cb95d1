import { Type } from '@sinclair/typebox';
import { principalOf, requireScope } from '../../shared/http/auth.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { validate } from '../../shared/http/validate.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import type { IngestService } from './ingest/ingest-service.js';
import { RECORD_TYPES } from './record-types.js';

export const INGEST_MAX_BYTES = 5 * 1024 * 1024;

const IngestParams = Type.Object({ connectionId: Type.String({ maxLength: 64 }) });
const IngestBody = Type.Object(
  {},
  {
    additionalProperties: true,
    description:
      "A FHIR R4 Bundle (type `collection`, `batch` or `searchset`) of up to 1000 Observation resources, each with an `id`. In a `searchset` (an EHR search's answer, sent as it came), entries whose `search.mode` is `include` or `outcome` are passed over.",
  },
);
const IngestResult = Type.Object({
  ingested: Type.Integer({ minimum: 0, description: 'Observations new to the connection.' }),
  updated: Type.Integer({ minimum: 0, description: 'Observations that replaced one of the same id.' }),
});

const RecordsBody = Type.Object(
  {},
  {
    additionalProperties: true,
    description:
      'A FHIR R4 Bundle (type `collection`, `batch` or `searchset`) of up to 1000 resources of the record types, each with an `id`. In a `searchset`, entries whose `search.mode` is `include` or `outcome` are passed over.',
  },
);
const RecordsResult = Type.Object({
  ingested: Type.Integer({ minimum: 0, description: 'Records new to the connection.' }),
  updated: Type.Integer({ minimum: 0, description: 'Records that replaced one of the same type and id.' }),
});

export function ingestRoutes(
  api: ApiRouter,
  { ingest, idempotent }: { ingest: IngestService } & Pick<RouteGuards, 'idempotent'>,
): void {
  const input = validate({
    params: IngestParams,
    body: IngestBody,
    maxBodyBytes: INGEST_MAX_BYTES,
    bodyMediaTypes: ['application/fhir+json'],
  });
  api.post(
    '/connections/:connectionId/observations',
    {
      operationId: 'ingestObservations',
      summary: "Ingest Observations into a connection's record",
      description:
        "Validates every entry against FHIR R4 (HL7's JSON schema for Observation, plus: `id` and `status` required, `code` with a coding or text, at most one `value[x]` and at most one `effective[x]` (both optional, as in FHIR R4: an observation without an effective date has no place in time, so no `date` search matches it and an app with a look-back window never sees it), real calendar dates, at most one v3-Confidentiality label, ids unique in the bundle). Any invalid entry → 400 listing each problem (`details.errors[].name` is the path, e.g. `entry[3].resource.status`; at most 100 listed) and nothing is written. Valid bundles are upserted by `Observation.id` within the connection, all or nothing: searches see none of a bundle until all of it is written, a bundle whose server stopped part-way is never seen (a retry with its `Idempotency-Key` writes it whole), and repeating a request is harmless. Bundles for one connection are written one at a time: one sent while another is written waits for it up to 3 s, then 503 with `Retry-After: 1`. Body limit 5 MiB (413). An absent, revoked or another account's connection is 404.",
      tags: ['Clinical ingest'],
      responses: { 200: { description: 'Written.', schema: IngestResult } },
    },
    requireScope('clinical:write'),
    input,
    idempotent(),
    async (ctx) => {
      const { params, body } = input.get(ctx);
      ctx.body = await ingest.ingest(principalOf(ctx), params.connectionId, body);
    },
  );

  const records = validate({
    params: IngestParams,
    body: RecordsBody,
    maxBodyBytes: INGEST_MAX_BYTES,
    bodyMediaTypes: ['application/fhir+json'],
  });
  api.post(
    '/connections/:connectionId/resources',
    {
      operationId: 'ingestResources',
      summary: "Ingest records of any type into a connection's record",
      description: `Records of every type the whole record holds (${RECORD_TYPES.join(', ')}), mixed as you like, with the same atomicity, limits and answers as \`ingestObservations\`. Each resource is checked against HL7's FHIR R4 JSON schema for its type (Observations also pass \`ingestObservations\`' own rules), needs an \`id\` (unique per type in the bundle), at most 1 MiB, valid security labels, and must be the connection's patient's: a \`Patient\` is the connection's patient, and a resource of the patient's compartment names it by its compartment element (\`subject\`, \`patient\` or \`beneficiary\`: \`Patient/<id>\`). For a connection made by signing in at a health system the patient is the one who signed in (\`connections[].patient\`); for another, any one Patient is accepted. Records are upserted by type and id within the connection. The search values of every parameter the FHIR face serves are derived from the resource when it is written.`,
      tags: ['Clinical ingest'],
      responses: { 200: { description: 'Written.', schema: RecordsResult } },
    },
    requireScope('clinical:write'),
    records,
    idempotent(),
    async (ctx) => {
      const { params, body } = records.get(ctx);
      ctx.body = await ingest.ingestRecords(principalOf(ctx), params.connectionId, body);
    },
  );
}
