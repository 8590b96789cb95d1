// The account's view of an app user's access log (docs/api.md, "The access log"): who read the user's records, as
// AuditEvents, newest first.
import { principalOf, requireScope } from '../../shared/http/auth.js';
import { PRIVATE_NO_CACHE } from '../../shared/http/caching.js';
import type { LinkBuilder } from '../../shared/http/links.js';
import type { ApiRouter } from '../../shared/http/openapi.js';
import { validate } from '../../shared/http/validate.js';
import { AppUserParams } from '../app-users/index.js';
import { AccessLogList, AccessLogQuery } from './schema.js';
import type { AccessLogService } from './service.js';

export function accessLogRoutes(
  api: ApiRouter,
  { accessLog, link }: { accessLog: AccessLogService; link: LinkBuilder },
) {
  const input = validate({ params: AppUserParams, query: AccessLogQuery });
  api.get(
    '/app-users/:appUserId/access-log',
    {
      operationId: 'listAccessLog',
      summary: "Who read an app user's records (the access log, newest first)",
      description:
        "Every read of the user's clinical data through the gateway and the FHIR face (searches, reads, `$everything` pages, `Binary`), answered or refused, as FHIR R4 AuditEvents: one per request, stored before its answer was sent, kept for PORTICO_AUDIT_RETENTION (6 years by default). A refusal appears when the connection it named is this account's. Only this account's entries are ever listed: a user never seen, or another account's id, lists nothing. `since` keeps reads recorded at or after an instant; the cursor and limit rules are the endpoint list's.",
      tags: ['App users'],
      responses: { 200: { description: 'One page.', schema: AccessLogList } },
    },
    requireScope('app_user:read'),
    input,
    async (ctx) => {
      const { params, query } = input.get(ctx);
      const since = query.since === undefined ? undefined : new Date(query.since);
      const page = await accessLog.list(principalOf(ctx).accountId, params.appUserId, {
        limit: query.limit,
        ...(since && { since }),
        ...(query.cursor !== undefined && { cursor: query.cursor }),
      });
      const self = new URLSearchParams({
        limit: String(query.limit),
        ...(query.since !== undefined && { since: query.since }),
        ...(query.cursor !== undefined && { cursor: query.cursor }),
      });
      ctx.set(PRIVATE_NO_CACHE);
      ctx.body = {
        data: page.events,
        pagination: { nextCursor: page.nextCursor, hasMore: page.nextCursor !== null },
        _links: {
          self: {
            href: link(
              `/api/platform/v1/app-users/${encodeURIComponent(params.appUserId)}/access-log?${self.toString()}`,
            ),
          },
        },
      };
    },
  );
}
