// Connecting a patient's health system from the browser: initiate a connect session with the publishable key and
// the link token the app's backend minted for this user (POST /api/platform/v1/link-tokens, with its secret key),
// open its authorizeUrl in a popup (resolving with the outcome when the popup comes back to the app's
// redirectUri) or in the page itself (the page at redirectUri then reads the outcome from its own URL).
import { dataOf, type Transport } from './http.js';
import { PorticoError } from './errors.js';
import type { operations } from './schema.js';
import type { Sleep } from './time.js';

type Initiate = operations['initiateConnectSession'];
export type InitiateConnectParams = Initiate['requestBody']['content']['application/json'];
export type ConnectSession = Initiate['responses'][201]['content']['application/json'];

export type ConnectOutcome =
  | { status: 'connected'; sessionId: string; connectionId: string }
  | { status: 'failed'; sessionId: string; error: string }
  /** The patient closed the popup (or the caller aborted) before coming back. */
  | { status: 'closed'; sessionId?: string };

/** What connect() needs of the browser window (a real `window` has it all; tests pass a stand-in). */
export interface ConnectWindow {
  readonly location: { readonly href: string; assign(url: string): void };
  open(url: string, target: string, features: string): ConnectPopup | null;
  /** Portico Connect's end page posts the outcome to its opener (a real window has these). */
  addEventListener?(type: 'message', listener: (event: ConnectMessage) => void): void;
  removeEventListener?(type: 'message', listener: (event: ConnectMessage) => void): void;
}

/** The parts of a MessageEvent connect() reads. */
export interface ConnectMessage {
  readonly origin: string;
  readonly source: unknown;
  readonly data: unknown;
}

export interface ConnectPopup {
  readonly closed: boolean;
  /** Reading it throws while the popup shows another origin's page; setting `href` navigates it. */
  readonly location: { href: string };
  close(): void;
}

export interface ConnectParams extends Omit<InitiateConnectParams, 'redirectUri' | 'linkToken'> {
  /**
   * What your backend got from `POST /api/platform/v1/link-tokens` (secret key) for this `appUserId` and
   * `redirectUri` (and, if it named them, this `brandId` or `connectionId`). Single use, 30 minutes: mint one for
   * each connect(). A token that is unknown, spent or expired rejects with the API's PorticoError
   * `LINK_TOKEN_INVALID`, one bound to another user, redirectUri, brand or connection with `LINK_TOKEN_MISMATCH`
   * (`details.mismatched` names the fields), and the popup closes.
   */
  linkToken: string;
  /** Where the patient returns: one of the app's redirectUris, on this page's origin for the popup mode. */
  redirectUri: string;
  mode: 'popup' | 'redirect';
  /** Default: the global `window`. */
  window?: ConnectWindow;
  /** Popup mode: aborting it closes the popup and resolves `{status: 'closed'}`. */
  signal?: AbortSignal;
  /** Popup mode: how often the popup's location is checked (default 250 ms). */
  pollIntervalMs?: number;
}

export const POPUP_NAME = 'portico-connect';
export const POPUP_FEATURES = 'popup,width=480,height=720';
const SESSION_LIFETIME_MS = 30 * 60 * 1000;

export interface ConnectDeps {
  sleep: Sleep;
  now: () => number;
  /** Portico's origin: the only sender of the end page's message. */
  origin: string;
}

export async function initiateConnect(
  transport: Transport,
  params: InitiateConnectParams,
  { idempotencyKey, signal }: { idempotencyKey?: string; signal?: AbortSignal } = {},
): Promise<ConnectSession> {
  return dataOf(
    transport.publishable().POST('/api/sdk/v1/connect-sessions', {
      body: params,
      params: { header: idempotencyKey === undefined ? {} : { 'Idempotency-Key': idempotencyKey } },
      ...(signal && { signal }),
    }),
  );
}

export async function connect(
  transport: Transport,
  deps: ConnectDeps,
  { mode, window: given, signal, pollIntervalMs = 250, ...initiate }: ConnectParams,
): Promise<ConnectOutcome | { status: 'redirected'; sessionId: string }> {
  const win = given ?? globalWindow();
  if (win === undefined) throw clientError('NO_WINDOW', 'connect() runs in a browser (or pass `window`)');
  // The popup is watched until it comes back to redirectUri (or the end page posts to it): on this page's origin.
  if (mode === 'popup' && new URL(initiate.redirectUri, win.location.href).origin !== new URL(win.location.href).origin)
    throw clientError('REDIRECT_URI_ORIGIN', "in a popup, redirectUri must be on this page's origin");
  // The popup opens now, while the click still allows it, before the network call; nothing is spent if blocked.
  const popup = mode === 'popup' ? win.open('about:blank', POPUP_NAME, POPUP_FEATURES) : null;
  if (mode === 'popup' && popup === null)
    throw clientError('POPUP_BLOCKED', 'the browser blocked the popup: call connect() on a click');
  let session: ConnectSession;
  try {
    session = await initiateConnect(transport, initiate, { ...(signal && { signal }) });
    if (session.authorizeUrl === undefined)
      throw clientError('NO_AUTHORIZE_URL', 'the session has no authorizeUrl (is redirectUri one of the app’s?)');
  } catch (error) {
    popup?.close();
    throw error;
  }
  if (mode === 'redirect' || popup === null) {
    win.location.assign(session.authorizeUrl);
    return { status: 'redirected', sessionId: session.id };
  }
  popup.location.href = session.authorizeUrl;
  // Portico Connect's end page tells its opener the outcome (the patient may close it there); only Portico's origin
  // and this popup are believed.
  let posted: ConnectOutcome | null = null;
  const onMessage = (event: ConnectMessage) => {
    if (event.origin !== deps.origin || event.source !== popup) return;
    const data = event.data as { type?: unknown; session?: unknown; status?: unknown } | null;
    if (data?.type !== 'portico:connect' || data.session !== session.id) return;
    const query = new URLSearchParams(
      Object.entries(data).filter(([, v]) => typeof v === 'string') as [string, string][],
    );
    posted = readConnectOutcome(`https://outcome.invalid/?${query}`);
  };
  win.addEventListener?.('message', onMessage);
  try {
    return await watchPopup(
      popup,
      session,
      win,
      deps,
      { signal, pollIntervalMs, redirectUri: initiate.redirectUri },
      () => posted,
    );
  } finally {
    win.removeEventListener?.('message', onMessage);
  }
}

async function watchPopup(
  popup: ConnectPopup,
  session: ConnectSession,
  win: ConnectWindow,
  deps: ConnectDeps,
  {
    signal,
    pollIntervalMs,
    redirectUri,
  }: { signal: AbortSignal | undefined; pollIntervalMs: number; redirectUri: string },
  posted: () => ConnectOutcome | null,
): Promise<ConnectOutcome> {
  const expiresAt = Date.parse(session.expiresAt);
  const deadline = Number.isNaN(expiresAt) ? deps.now() + SESSION_LIFETIME_MS : expiresAt;
  const target = new URL(redirectUri, win.location.href);
  for (;;) {
    await deps.sleep(pollIntervalMs, signal);
    const outcome = returnedOutcome(popup, target, session.id) ?? posted();
    if (outcome !== null) {
      popup.close();
      return outcome;
    }
    if (popup.closed) return { status: 'closed', sessionId: session.id };
    if (signal?.aborted) {
      popup.close();
      return { status: 'closed', sessionId: session.id };
    }
    if (deps.now() >= deadline) {
      popup.close();
      return { status: 'failed', sessionId: session.id, error: 'session_expired' };
    }
  }
}

/** The outcome once the popup is back at `target` (same origin and path) for this session, else null. */
function returnedOutcome(popup: ConnectPopup, target: URL, sessionId: string): ConnectOutcome | null {
  let href: string;
  try {
    href = popup.location.href;
  } catch {
    return null; // another origin's page: the picker, the health system's sign-in
  }
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return null;
  }
  if (url.origin !== target.origin || url.pathname !== target.pathname) return null;
  const outcome = readConnectOutcome(url);
  return outcome !== null && outcome.sessionId === sessionId ? outcome : null;
}

/**
 * The outcome carried by the URL Portico sends the browser back to (`session`, `status`, `connectionId`,
 * `error`): for the page at redirectUri after a redirect-mode connect(). Null when the URL carries no session.
 */
export function readConnectOutcome(url: string | URL = globalWindow()?.location.href ?? ''): ConnectOutcome | null {
  let params: URLSearchParams;
  try {
    params = new URL(url).searchParams;
  } catch {
    return null;
  }
  const sessionId = params.get('session');
  if (!sessionId) return null;
  const connectionId = params.get('connectionId');
  if (params.get('status') === 'connected' && connectionId) return { status: 'connected', sessionId, connectionId };
  return { status: 'failed', sessionId, error: params.get('error') ?? 'unknown_error' };
}

function globalWindow(): ConnectWindow | undefined {
  return (globalThis as { window?: ConnectWindow }).window;
}

function clientError(code: string, detail: string): PorticoError {
  return new PorticoError({ status: 0, code, detail, retryable: false });
}
