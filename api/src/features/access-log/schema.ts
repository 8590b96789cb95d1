// The access log's request and response shapes (docs/api.md, "The access log").
import { Type } from '@sinclair/typebox';
import { Links, PageLimit } from '../../shared/http/schemas.js';

export const AccessLogQuery = Type.Object({
  since: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'Only reads recorded at or after this instant (RFC 3339, with a time zone).',
    }),
  ),
  limit: PageLimit,
  cursor: Type.Optional(
    Type.String({
      maxLength: 1024,
      description:
        'Opaque `pagination.nextCursor` of the previous page (with the same `since`), passed back unchanged.',
    }),
  ),
});

/** A FHIR R4 AuditEvent (IHE BALP); described, not restated field by field (audit-event.ts makes it). */
export const AuditEvent = Type.Object(
  {
    resourceType: Type.Literal('AuditEvent'),
    id: Type.String({ format: 'uuid', description: 'Time-ordered (UUIDv7).' }),
    recorded: Type.String({ format: 'date-time' }),
    outcome: Type.Union([Type.Literal('0'), Type.Literal('4')], { description: '0: answered; 4: refused.' }),
  },
  {
    additionalProperties: true,
    description:
      "One read of clinical data, after IHE's Basic Audit Log Patterns (PatientRead for a read or a Binary, PatientQuery for a search or `$everything`, named in `meta.tag`, not claimed as profiles: Portico keeps neither the query's values nor the ids read): `agent` names the app (`https://portico.dev/fhir/sid/app`, the requestor), its account (`…/account`) and Portico; `entity` the app user (`…/app-user`, role Patient) and the connection (`…/connection`, its health system's name as `display`) with `detail` `resourceType`, `count` (resources in the answer), `brandId` and `requestId`; `outcomeDesc` the refusal's reason. Never a resource's content, nor a search's parameters.",
  },
);

export const AccessLogList = Type.Object({
  data: Type.Array(AuditEvent),
  pagination: Type.Object({ nextCursor: Type.Union([Type.String(), Type.Null()]), hasMore: Type.Boolean() }),
  _links: Links,
});
