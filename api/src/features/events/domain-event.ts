// What an event is, apart from where it is kept: the types an endpoint subscribes to and the shape every part of
// the outbox shares (docs/api.md, "Receiving webhooks"). Other features name these through
// features/events/index.ts.

/** The event types an endpoint can subscribe to (docs/api.md, "Receiving webhooks"). */
export const EVENT_TYPES = [
  'patient.created',
  'patient.deleted',
  'app_user.limited',
  'app_user.activated',
  'app_user.tombstoned',
  'connection.created',
  'connection.revoked',
  'connection.reauthorization_required',
  'connection.synced',
  'connection.sync_failed',
  'webhook_endpoint.disabled',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Sent by `POST /webhook-endpoints/{id}/test` to that endpoint alone; nobody subscribes to it. */
export const TEST_EVENT_TYPE = 'webhook.test';
export type DeliverableType = EventType | typeof TEST_EVENT_TYPE;

export interface DomainEvent {
  id: string;
  type: DeliverableType;
  customerAccountId: string;
  /** The resource the event is about, e.g. "patient:<id>". */
  subject: string;
  /** Identifiers and non-clinical state only: receivers log payloads (docs/api.md, "Receiving webhooks"). */
  data: Record<string, unknown>;
  occurredAt: Date;
  /** Delivered to this endpoint only, whatever it subscribes to (webhook.test). */
  targetEndpointId?: string;
}

/** The document a change writes and the version it leaves it at: where recovery looks for the change's id. */
export interface ChangeTarget {
  collection: string;
  id: string;
  version: number;
}
