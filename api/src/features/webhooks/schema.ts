import { Type, type Static } from '@sinclair/typebox';
import { EVENT_TYPES } from '../events/index.js';
import { Links, NullableTimestamp, PageLimit, Text, Timestamp, Version } from '../../shared/http/schemas.js';
import { MAX_URL_LENGTH } from './url-policy.js';

export const MAX_ENDPOINTS_PER_ACCOUNT = 100;

const EventType = Type.Union([...EVENT_TYPES.map((t) => Type.Literal(t)), Type.Literal('*')]);
const EventTypes = Type.Array(EventType, {
  minItems: 1,
  maxItems: EVENT_TYPES.length,
  uniqueItems: true,
  description: 'A non-empty set of event types, or `["*"]` for all of them.',
});
const Url = Type.String({
  maxLength: MAX_URL_LENGTH,
  description:
    'Absolute https URL without user-info or fragment, on port 443 or a port from 1024 to 65535; its host must not be or resolve to a loopback, private, link-local, multicast, unspecified or otherwise reserved address (checked at create/patch and again at delivery). A host that does not resolve is refused.',
});
const Description = Text(0, 500);
export const Status = Type.Union([Type.Literal('ACTIVE'), Type.Literal('PAUSED'), Type.Literal('DISABLED')], {
  description: '`ACTIVE`; `PAUSED` by the owner; `DISABLED` by the delivery system after repeated failures or a 410.',
});

export const CreateWebhookEndpoint = Type.Object(
  { url: Url, eventTypes: EventTypes, description: Type.Optional(Description) },
  { additionalProperties: false },
);
export type CreateWebhookEndpoint = Static<typeof CreateWebhookEndpoint>;

export const UpdateWebhookEndpoint = Type.Object(
  {
    url: Type.Optional(Url),
    eventTypes: Type.Optional(EventTypes),
    description: Type.Optional(
      Type.Union([Description, Type.Null()], { description: '`null` removes the description.' }),
    ),
    status: Type.Optional(
      Type.Union([Type.Literal('ACTIVE'), Type.Literal('PAUSED')], {
        description: '`ACTIVE` also resets `consecutiveFailures` to 0.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'JSON merge patch (RFC 7396). `{}` changes nothing and keeps `_version`.',
  },
);
export type UpdateWebhookEndpoint = Static<typeof UpdateWebhookEndpoint>;

export const ListQuery = Type.Object({
  limit: PageLimit,
  cursor: Type.Optional(
    Type.String({
      maxLength: 1024,
      description: 'Opaque `pagination.nextCursor` of the previous page, passed back unchanged.',
    }),
  ),
});

export const WebhookEndpoint = Type.Object({
  id: Type.String({ format: 'uuid' }),
  resourceType: Type.Literal('WebhookEndpoint'),
  url: Type.String({ format: 'uri' }),
  eventTypes: Type.Array(Type.String()),
  description: Type.Optional(Type.String()),
  status: Status,
  consecutiveFailures: Type.Integer({ minimum: 0 }),
  lastDeliveryAttemptAt: NullableTimestamp,
  lastSuccessfulDeliveryAt: NullableTimestamp,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  _version: Version,
  _links: Links,
});
export type WebhookEndpointView = Static<typeof WebhookEndpoint>;

export const CreatedWebhookEndpoint = Type.Intersect([
  WebhookEndpoint,
  Type.Object({
    secret: Type.String({ pattern: '^whsec_', description: 'Signing secret, shown only in this response.' }),
  }),
]);

export const WebhookEndpointList = Type.Object({
  data: Type.Array(WebhookEndpoint),
  pagination: Type.Object({ nextCursor: Type.Union([Type.String(), Type.Null()]), hasMore: Type.Boolean() }),
  _links: Links,
});

// ——— deliveries ———

export const AttemptStatus = Type.Union([Type.Literal('SUCCEEDED'), Type.Literal('FAILED'), Type.Literal('PENDING')]);

export const DeliveriesQuery = Type.Object({
  status: Type.Optional(
    Type.Union([Type.Literal('SUCCEEDED'), Type.Literal('FAILED'), Type.Literal('PENDING')], {
      description: 'Only attempts in this state.',
    }),
  ),
  limit: PageLimit,
  cursor: Type.Optional(
    Type.String({
      maxLength: 1024,
      description:
        'Opaque `pagination.nextCursor` of the previous page (with the same `status`), passed back unchanged.',
    }),
  ),
});

export const DeliveryAttempt = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'Time-ordered (UUIDv7).' }),
    eventId: Type.String({
      format: 'uuid',
      description: 'The event, and the `webhook-id` header every attempt at it carries.',
    }),
    eventType: Type.String(),
    attempt: Type.Integer({ minimum: 1, description: '1 for the first attempt at this event for this endpoint.' }),
    trigger: Type.Union([Type.Literal('SCHEDULED'), Type.Literal('MANUAL'), Type.Literal('RECOVER')], {
      description: '`MANUAL`: the test operation; `RECOVER`: queued by recover.',
    }),
    status: AttemptStatus,
    responseStatus: Type.Union([Type.Integer(), Type.Null()], {
      description: "The receiver's HTTP status; null when it did not answer (or the attempt is still PENDING).",
    }),
    durationMs: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
    error: Type.Union([Type.String(), Type.Null()], {
      description: 'Why the attempt failed (never the response body).',
    }),
    attemptedAt: NullableTimestamp,
    nextAttemptAt: Type.Union([Timestamp, Type.Null()], {
      description: 'PENDING: when it is due. FAILED: when the next attempt is due, or null when there is none.',
    }),
  },
  {
    description: 'One attempt to deliver an event to the endpoint; PENDING ones are scheduled and not yet made.',
    examples: [
      {
        id: '019a8f3c-5e21-7c4d-9b8a-1f2e3d4c5b6a',
        eventId: '0b4f3a52-7d2e-4c38-9a55-2f2d0c7e1a90',
        eventType: 'patient.created',
        attempt: 2,
        trigger: 'SCHEDULED',
        status: 'PENDING',
        responseStatus: null,
        durationMs: null,
        error: null,
        attemptedAt: null,
        nextAttemptAt: '2026-11-22T10:05:04.120Z',
      },
      {
        id: '019a8f3a-1b10-7a2e-8c3d-4e5f6a7b8c9d',
        eventId: '0b4f3a52-7d2e-4c38-9a55-2f2d0c7e1a90',
        eventType: 'patient.created',
        attempt: 1,
        trigger: 'SCHEDULED',
        status: 'FAILED',
        responseStatus: 503,
        durationMs: 84,
        error: 'the endpoint answered 503',
        attemptedAt: '2026-11-22T10:00:00.213Z',
        nextAttemptAt: '2026-11-22T10:05:04.120Z',
      },
    ],
  },
);

export const DeliveryAttemptList = Type.Object({
  data: Type.Array(DeliveryAttempt),
  pagination: Type.Object({ nextCursor: Type.Union([Type.String(), Type.Null()]), hasMore: Type.Boolean() }),
  _links: Links,
});

export const RecoverBody = Type.Object(
  {
    since: Type.String({
      format: 'date-time',
      description: 'Recover events that occurred at or after this instant, at most 14 days ago.',
    }),
  },
  { additionalProperties: false, examples: [{ since: '2026-11-21T00:00:00.000Z' }] },
);
export const RecoverResult = Type.Object(
  { events: Type.Integer({ minimum: 0, description: 'How many events are queued again.' }) },
  { examples: [{ events: 3 }] },
);
export const RotatedSecret = Type.Object(
  { secret: Type.String({ pattern: '^whsec_', description: 'The new signing secret, shown only in this response.' }) },
  { examples: [{ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw9rXkhJ3u0Gs=' }] },
);
export const TestSent = Type.Object(
  {
    eventId: Type.String({
      format: 'uuid',
      description: 'The `webhook.test` event; its attempts appear in the attempt log.',
    }),
  },
  { examples: [{ eventId: '6e2d1c0b-9a8f-4e7d-8c6b-5a4f3e2d1c0b' }] },
);
