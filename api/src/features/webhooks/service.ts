// Webhook endpoints of a customer account: create within the quota, keyset-paginated listing, merge-patch
// updates, secret rotation and soft deletion under optimistic concurrency (conditional updates on _version).
// Deliveries (the attempt log, recover, test) are delivery-service.ts's.
import { randomUUID } from 'node:crypto';
import { newSigningSecret } from './delivery/signing.js';
import type { AccountStore } from '../accounts/index.js';
import type { Clock } from '#core/clock.js';
import { preconditionHolds, type Precondition } from '../../shared/http/conditional.js';
import type { CursorCodec } from '../../shared/http/cursor.js';
import { AppError, invalidField, notFound } from '../../shared/http/errors.js';
import type { Principal } from '../../shared/http/auth.js';
import type { DeliveryStore } from './delivery/deliveries.js';
import type { EndpointChanges, WebhookEndpoint, WebhookEndpointStore } from './store.js';
import { MAX_ENDPOINTS_PER_ACCOUNT, type CreateWebhookEndpoint, type UpdateWebhookEndpoint } from './schema.js';
import { checkWebhookUrl, type UrlPolicy } from './url-policy.js';

const LIST_ROUTE = 'webhook-endpoints.list';
/**
 * Attempts at a conditional write that lost a race without an If-Match to arbitrate. The delivery recorder
 * (features/webhooks/delivery/recorder.ts) moves an endpoint's `_version` on every batch of attempts (up to every 100 ms
 * per replica), so an owner's write to a busy endpoint, whose read → recovery point → write window is widest inside an
 * idempotent request, can lose several rounds in a row to bookkeeping alone; it is a conflict only when it keeps
 * losing. (Found by the isolation matrix: 5 attempts lost 5-6 of 200 idempotent PATCHes under traffic.)
 */
const MAX_WRITE_ATTEMPTS = 20;

/** How long the secret before a rotation keeps signing beside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;

export interface WebhookEndpointServiceDeps {
  endpoints: WebhookEndpointStore;
  accounts: AccountStore;
  /** Queued deliveries to a deleted endpoint are cancelled. */
  deliveries: Pick<DeliveryStore, 'cancel'>;
  cursors: CursorCodec;
  urlPolicy: UrlPolicy;
  clock: Clock;
}

export interface Page {
  items: WebhookEndpoint[];
  nextCursor: string | null;
}

export class WebhookEndpointService {
  /** The cursor of a page that ends at the endpoint (list()). */
  private readonly cursorAfter = new WeakMap<WebhookEndpoint, string>();

  constructor(private readonly deps: WebhookEndpointServiceDeps) {}

  async create(principal: Principal, input: CreateWebhookEndpoint): Promise<WebhookEndpoint> {
    checkEventTypes(input.eventTypes);
    const url = await checkWebhookUrl(input.url, this.deps.urlPolicy);
    const accountId = principal.accountId;
    if (!(await this.deps.accounts.reserve(accountId, 'webhookEndpoints', MAX_ENDPOINTS_PER_ACCOUNT))) {
      throw new AppError(
        'LIMIT_EXCEEDED',
        `An account can have at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one first.`,
        { limit: MAX_ENDPOINTS_PER_ACCOUNT },
      );
    }
    const now = this.deps.clock.now();
    const endpoint: WebhookEndpoint = {
      id: randomUUID(),
      accountId,
      url,
      eventTypes: input.eventTypes,
      description: input.description ?? null,
      status: 'ACTIVE',
      secret: newSigningSecret(),
      previousSecret: null,
      previousSecretExpiresAt: null,
      consecutiveFailures: 0,
      failingSince: null,
      failureResets: 0,
      lastDeliveryAttemptAt: null,
      lastSuccessfulDeliveryAt: null,
      createdAt: now,
      updatedAt: now,
      version: 1,
      deletedAt: null,
    };
    try {
      await this.deps.endpoints.insert(endpoint);
    } catch (error) {
      // The insert's own failure is the answer (an idempotent request judges by it whether the insert may still land).
      // A release that fails too leaves the slot counted: the account is one endpoint short, never over its quota.
      await this.deps.accounts.release(accountId, 'webhookEndpoints').catch(() => undefined);
      throw error;
    }
    return endpoint;
  }

  async list(principal: Principal, limit: number, cursor: string | undefined): Promise<Page> {
    const binding = { route: LIST_ROUTE, accountId: principal.accountId };
    const after = cursor === undefined ? undefined : this.deps.cursors.decodePosition(binding, cursor);
    const { items, hasMore } = await this.deps.endpoints.listLive(principal.accountId, limit, after);
    const last = items.at(-1);
    if (!hasMore || !last) return { items, nextCursor: null };
    // A page's cursor depends only on its last endpoint (one account's, at one version): the cached endpoint object
    // carries it, signed on the first request that ends a page there rather than on every one.
    let nextCursor = this.cursorAfter.get(last);
    if (nextCursor === undefined)
      this.cursorAfter.set(last, (nextCursor = this.deps.cursors.encodePosition(binding, last)));
    return { items, nextCursor };
  }

  async get(principal: Principal, id: string): Promise<WebhookEndpoint> {
    const endpoint = await this.deps.endpoints.readLive(principal.accountId, id);
    if (!endpoint) throw notFound('webhook endpoint');
    return endpoint;
  }

  async update(
    principal: Principal,
    id: string,
    patch: UpdateWebhookEndpoint,
    precondition: Precondition | undefined,
  ): Promise<WebhookEndpoint> {
    if (patch.eventTypes) checkEventTypes(patch.eventTypes);
    let url: string | undefined;
    for (let attempt = 1; ; attempt++) {
      const current = await this.current(principal, id, precondition);
      // Only an existing endpoint (404 first, then 412) is worth a DNS lookup.
      if (patch.url !== undefined && url === undefined) url = await checkWebhookUrl(patch.url, this.deps.urlPolicy);
      const changes = changesOf(current, { ...patch, ...(url !== undefined && { url }) });
      if (Object.keys(changes).length === 0) return current;
      const updated = await this.deps.endpoints.update(
        principal.accountId,
        id,
        current.version,
        changes,
        this.deps.clock.now(),
      );
      if (updated) return updated;
      if (attempt >= MAX_WRITE_ATTEMPTS) throw concurrentChange();
    }
  }

  async delete(principal: Principal, id: string, precondition: Precondition | undefined): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.current(principal, id, precondition);
      if (await this.deps.endpoints.softDelete(principal.accountId, id, current.version, this.deps.clock.now())) {
        await this.deps.accounts.release(principal.accountId, 'webhookEndpoints');
        await this.deps.deliveries.cancel(principal.accountId, id, 'the endpoint was deleted');
        return;
      }
      if (attempt >= MAX_WRITE_ATTEMPTS) throw concurrentChange();
    }
  }

  /**
   * A new signing secret, shown once; the one it replaces keeps signing beside it for 24 hours, so receivers
   * verify with either while they switch.
   */
  async rotateSecret(
    principal: Principal,
    id: string,
    precondition: Precondition | undefined,
  ): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    const secret = newSigningSecret();
    for (let attempt = 1; ; attempt++) {
      const current = await this.current(principal, id, precondition);
      const now = this.deps.clock.now();
      const changes = {
        secret,
        previousSecret: current.secret,
        previousSecretExpiresAt: new Date(now.getTime() + ROTATION_OVERLAP_MS),
      };
      const updated = await this.deps.endpoints.update(principal.accountId, id, current.version, changes, now);
      if (updated) return { endpoint: updated, secret };
      if (attempt >= MAX_WRITE_ATTEMPTS) throw concurrentChange();
    }
  }

  /** The live endpoint, after existence (404) and then the If-Match precondition (412). */
  private async current(
    principal: Principal,
    id: string,
    precondition: Precondition | undefined,
  ): Promise<WebhookEndpoint> {
    const current = await this.deps.endpoints.findLive(principal.accountId, id);
    if (!current) throw notFound('webhook endpoint');
    if (!preconditionHolds(precondition, String(current.version))) {
      throw new AppError('PRECONDITION_FAILED', 'The webhook endpoint has changed since the given entity tag.', {
        currentVersion: String(current.version),
      });
    }
    return current;
  }
}

/** Lost every race: worth a retry, so never replayed as the request's outcome. */
const concurrentChange = () =>
  new AppError('CONFLICT', 'The webhook endpoint is being changed concurrently; retry.', {}, {}, { storable: false });

function checkEventTypes(eventTypes: readonly string[]): void {
  if (eventTypes.includes('*') && eventTypes.length > 1) throw invalidField('body', 'eventTypes', '"*" stands alone');
}

const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x) => b.includes(x));

/** Only what actually differs; setting status ACTIVE also clears the failure count. */
function changesOf(current: WebhookEndpoint, patch: UpdateWebhookEndpoint): EndpointChanges {
  const changes: EndpointChanges = {};
  if (patch.url !== undefined && patch.url !== current.url) changes.url = patch.url;
  if (patch.eventTypes !== undefined && !sameSet(patch.eventTypes, current.eventTypes))
    changes.eventTypes = patch.eventTypes;
  if (patch.description !== undefined && patch.description !== current.description)
    changes.description = patch.description;
  if (patch.status !== undefined && patch.status !== current.status) changes.status = patch.status;
  // Reactivating starts the failure count (and the run it belongs to) afresh; outcomes of attempts made before,
  // written later, no longer count (store.ts, failureResets; docs/api.md, "Receiving webhooks").
  if (patch.status === 'ACTIVE' && current.consecutiveFailures !== 0) changes.consecutiveFailures = 0;
  if (patch.status === 'ACTIVE' && current.failingSince !== null) changes.failingSince = null;
  if (changes.status === 'ACTIVE' || changes.consecutiveFailures === 0 || changes.failingSince === null) {
    changes.failureResets = current.failureResets + 1;
  }
  return changes;
}
