// Calls to the webhook-endpoint routes as one tenant, shared by the webhook test files.
import type { TestApi } from './api.js';
import { buildEndpoint } from './factories.js';

export const WEBHOOKS = '/api/platform/v1/webhook-endpoints';

/** `api` and `key` are read at call time: test files start their API in a before hook. */
export function webhookClient(api: () => TestApi, key: () => string) {
  return {
    create: (body: unknown = buildEndpoint()) => api().request('POST', WEBHOOKS, { key: key(), body }),
    get: (id: string, headers: Record<string, string> = {}) =>
      api().request('GET', `${WEBHOOKS}/${id}`, { key: key(), headers }),
    patch: (id: string, body: unknown, contentType = 'application/merge-patch+json') =>
      api().request('PATCH', `${WEBHOOKS}/${id}`, { key: key(), body, headers: { 'content-type': contentType } }),
    listAll: async () =>
      (await api().request('GET', `${WEBHOOKS}?limit=100`, { key: key() })).body.data as { id: string }[],
  };
}

/** An endpoint as every response but the create shows it. */
export function withoutSecret(body: Record<string, unknown>): Record<string, unknown> {
  const { secret: _secret, ...rest } = body;
  return rest;
}
