// Driving the sandbox EHR (sandbox/src) the way a patient's browser and an app do: sign in on its page, and, for
// the sandbox's own tests, a PKCE authorization request and a token exchange.
import { createHash, randomBytes } from 'node:crypto';
import type { SandboxEhr } from '../sandbox/src/server.js';

export interface SignInOptions {
  username?: string;
  password?: string;
  decision?: 'allow' | 'deny';
}

/**
 * Opens the EHR's authorize URL (as a browser would after Portico's 302), submits its sign-in form and returns
 * where the EHR sends the browser next: the app's (or Portico's) callback with `code` or `error`, and `state`.
 * An authorization request the EHR refuses outright returns its error redirect; a refusal page or a failed
 * sign-in throws, with the page's message.
 */
export async function signIn(authorizeUrl: string, opts: SignInOptions = {}): Promise<URL> {
  const page = await fetch(authorizeUrl, { redirect: 'manual' });
  const html = await page.text();
  if (page.status === 302 || page.status === 303) return new URL(page.headers.get('location')!, authorizeUrl);
  const id = /name="id" value="([^"]+)"/.exec(html)?.[1];
  if (page.status !== 200 || !id)
    throw new Error(`the EHR refused the authorization request (${page.status}): ${pageMessage(html)}`);
  const answer = await fetch(new URL('authorize', authorizeUrl), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      id,
      username: opts.username ?? 'ada',
      password: opts.password ?? 'sandbox',
      decision: opts.decision ?? 'allow',
    }),
  });
  const location = answer.headers.get('location');
  if (answer.status !== 302 || !location)
    throw new Error(`sign-in did not redirect (${answer.status}): ${pageMessage(await answer.text())}`);
  return new URL(location, authorizeUrl);
}

function pageMessage(html: string): string {
  const alert = /role="alert">([^<]*)</.exec(html)?.[1];
  return alert ?? html.slice(0, 200);
}

export interface Pkce {
  verifier: string;
  challenge: string;
}

export function pkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export const V2_SCOPE = 'launch/patient offline_access patient/Patient.rs patient/Observation.rs';
export const V1_SCOPE = 'launch/patient offline_access patient/Patient.read patient/Observation.read';

/** A well-formed authorization request to the sandbox; `params` overrides or (with undefined) removes one. */
export function authorizeUrl(
  ehr: SandboxEhr,
  brandKey: string,
  params: Record<string, string | undefined> & { client_id: string; redirect_uri: string },
  challenge: string,
): string {
  const url = new URL(`${ehr.origin}/oauth/${brandKey}/authorize`);
  const all: Record<string, string | undefined> = {
    response_type: 'code',
    scope: V2_SCOPE,
    state: randomBytes(16).toString('base64url'),
    aud: ehr.fhirBaseUrl(brandKey),
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...params,
  };
  for (const [name, value] of Object.entries(all)) if (value !== undefined) url.searchParams.set(name, value);
  return url.href;
}

/** POSTs a form to one of the sandbox's OAuth endpoints; returns the status, headers and JSON body. */
export async function postForm(
  url: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

/** HTTP Basic as RFC 6749 §2.3.1 builds it: each part form-urlencoded first. */
export function basicAuth(clientId: string, secret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(secret)}`).toString('base64')}`;
}

export interface Connected {
  status: number;
  body: any;
  code: string;
  redirectUri: string;
  verifier: string;
}

/** A public client's whole authorization: authorize, sign in, exchange the code. */
export async function connectPublicClient(
  ehr: SandboxEhr,
  opts: { brandKey: string; clientId: string; redirectUri: string; username?: string; scope?: string },
): Promise<Connected> {
  const { verifier, challenge } = pkce();
  const params = {
    client_id: opts.clientId,
    redirect_uri: opts.redirectUri,
    ...(opts.scope ? { scope: opts.scope } : {}),
  };
  const back = await signIn(authorizeUrl(ehr, opts.brandKey, params, challenge), { username: opts.username ?? 'ada' });
  const code = back.searchParams.get('code');
  if (!code) throw new Error(`no code: ${back.href}`);
  const { status, body } = await postForm(`${ehr.origin}/oauth/${opts.brandKey}/token`, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: opts.redirectUri,
    code_verifier: verifier,
    client_id: opts.clientId,
  });
  return { status, body, code, redirectUri: opts.redirectUri, verifier };
}

/** A GET on the sandbox's FHIR server with an access token. */
export async function fhirGet(
  url: string,
  accessToken: string,
): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${accessToken}`, accept: 'application/fhir+json' },
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** A GET answered with JSON, as untyped as the tests read it. */
export async function getJson(url: string): Promise<any> {
  return (await fetch(url)).json();
}
