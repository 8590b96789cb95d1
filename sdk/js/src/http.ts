// The HTTP layer under every call: openapi-fetch clients typed by the generated schema, one per credential, and
// the one place where an answer becomes data or a PorticoError.
import createClient, { type Client } from 'openapi-fetch';
import { errorFromResponse, networkError, PorticoError } from './errors.js';
import type { paths } from './schema.js';

export type FetchLike = (input: Request) => Promise<Response>;

export interface Transport {
  /** No credential: the catalog. */
  readonly anonymous: Client<paths>;
  /** `Authorization: Bearer pk_…`: app-user lifecycle and connect sessions. */
  publishable(): Client<paths>;
  /** `Authorization: Bearer ak_…`: the observation gateway. */
  app(): Client<paths>;
}

export interface TransportOptions {
  baseUrl: string;
  publishableKey?: string | undefined;
  appKey?: string | undefined;
  fetch?: FetchLike | undefined;
}

export function createTransport({ baseUrl, publishableKey, appKey, fetch }: TransportOptions): Transport {
  // A plain call (not a method call on some object) keeps `window.fetch` from failing with "Illegal invocation".
  const send: FetchLike = (request) => (fetch ? fetch(request) : globalThis.fetch(request));
  const client = (key?: string) =>
    createClient<paths>({
      baseUrl: baseUrl.replace(/\/+$/, ''),
      fetch: send,
      ...(key === undefined ? {} : { headers: { Authorization: `Bearer ${key}` } }),
    });
  const anonymous = client();
  let withPublishable: Client<paths> | undefined;
  let withApp: Client<paths> | undefined;
  return {
    anonymous,
    publishable: () => (withPublishable ??= client(required(publishableKey, 'publishableKey', 'pk_'))),
    app: () => (withApp ??= client(required(appKey, 'appKey', 'ak_'))),
  };
}

function required(key: string | undefined, option: string, prefix: string): string {
  if (key === undefined || key === '')
    throw new PorticoError({
      status: 0,
      code: 'MISSING_KEY',
      detail: `this call needs the ${option} option (a ${prefix}… key)`,
      retryable: false,
    });
  return key;
}

/** What an openapi-fetch call resolves to (data on 2xx, the parsed body as `error` otherwise). */
interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * The data of a 2xx answer, else a PorticoError; `304` is passed through as `notModified` for the callers that
 * send `If-None-Match`.
 */
export async function answer<T>(
  call: Promise<Answer<T>>,
): Promise<{ data: T; response: Response } | { notModified: true; response: Response }> {
  let result: Answer<T>;
  try {
    result = await call;
  } catch (error) {
    throw error instanceof PorticoError ? error : networkError(error);
  }
  const { response } = result;
  if (response.status === 304) return { notModified: true, response };
  if (!response.ok) throw errorFromResponse(response, result.error);
  return { data: result.data as T, response };
}

/** The data of a 2xx answer, else a PorticoError (for calls that never send a precondition). */
export async function dataOf<T>(call: Promise<Answer<T>>): Promise<T> {
  const result = await answer(call);
  if ('notModified' in result) throw errorFromResponse(result.response, undefined);
  return result.data;
}
