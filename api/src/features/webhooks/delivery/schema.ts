// The webhook request Portico makes (docs/api.md, "Receiving webhooks"), for /openapi.json's `webhooks` section.
import { Type } from '@sinclair/typebox';
import type { WebhookDoc } from '../../../shared/http/openapi.js';
import { EVENT_TYPES, TEST_EVENT_TYPE } from '../../events/index.js';

export const WebhookPayload = Type.Object(
  {
    id: Type.String({
      format: 'uuid',
      description: 'The event id; equal to the `webhook-id` header, the same on every retry: deduplicate by it.',
    }),
    type: Type.Union([...EVENT_TYPES, TEST_EVENT_TYPE].map((t) => Type.Literal(t))),
    timestamp: Type.String({ format: 'date-time', description: 'When the event occurred.' }),
    customerAccountId: Type.String({ format: 'uuid' }),
    data: Type.Object(
      {},
      {
        additionalProperties: true,
        description:
          'Identifiers and non-clinical state only: `patient.*` {patientId}; `app_user.*` {appUserId, state}; `connection.*` {connectionId, appUserId, brandId} (`connection.revoked` adds `by`: `account` when the account’s key or a tombstone revoked it, `patient` when the patient stopped sharing on their own page; `connection.reauthorization_required` adds `reason`: `invalid_grant`, `patient_mismatch` or `token_unreadable`; `connection.synced` adds `added`, `updated` and `counts` {<type>: {added, updated}}, and after a full run `removed` (also in the counts of each type); `connection.sync_failed` adds `reason`); `webhook_endpoint.disabled` {webhookEndpointId, reason: consecutive_failures|gone}; `webhook.test` {webhookEndpointId}.',
      },
    ),
  },
  {
    examples: [
      {
        id: '0b4f3a52-7d2e-4c38-9a55-2f2d0c7e1a90',
        type: 'patient.created',
        timestamp: '2026-11-22T10:00:00.000Z',
        customerAccountId: '5d1c7a0e-3c52-4f3b-8f0e-2a6f9a3c1d44',
        data: { patientId: '9a7e5c31-2b4d-4e6f-8a1c-3d5e7f9b0c2a' },
      },
    ],
  },
);

export const EVENT_WEBHOOK: WebhookDoc = {
  name: 'portico-event',
  summary: 'An event, delivered to your webhook endpoint',
  description:
    'POSTed to each ACTIVE endpoint subscribed to the event type, signed the Standard Webhooks way. A 2xx within 15 s is a success; anything else (redirects are not followed) is retried 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h later (±20 % jitter), or no earlier than a 429/503 `Retry-After` asks (up to an hour). An endpoint that has failed 15 times in a row and for at least 24 hours, or answered 410, is DISABLED; recover what it missed with POST /webhook-endpoints/{id}/recover once it is ACTIVE again. No order is promised between events.',
  headers: [
    { name: 'webhook-id', description: 'The event id, the same on every attempt.' },
    {
      name: 'webhook-timestamp',
      description: 'Unix seconds of this attempt (fresh on every retry); refuse timestamps more than 5 minutes off.',
    },
    {
      name: 'webhook-signature',
      description:
        'Space-separated `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` under each signing secret (two for 24 hours after a rotation).',
    },
    { name: 'user-agent', description: '`Portico-Webhooks/<version>`.' },
  ],
  body: WebhookPayload,
  responses: {
    '2XX': 'Received: the delivery succeeded.',
    default: 'Anything else, or no answer within 15 s: a failed attempt, retried.',
  },
};
