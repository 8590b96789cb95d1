// The cookie that binds a sign-in to the browser that started it (docs/connecting.md, "The callback belongs to the
// browser that started it"). Visiting authorizeUrl sets it; the callback refuses a `state` whose browser does not
// hold the matching value, so a copied authorization link that someone else signs in with lands nowhere.
//
// `__Host-portico-connect` (Secure, HttpOnly, SameSite=Lax, path /, no Domain: no sibling host can set or read it);
// over plain http in development, `portico-connect` without Secure. The value lists up to four sign-ins
// (`<session id>.<secret>`, newest first), so a patient connecting two health systems in two tabs loses neither.
// SameSite=Lax still sends it on the health system's top-level redirect back to the callback.

import { cookieLine } from '../../../shared/http/cookies.js';

export const SECURE_COOKIE = '__Host-portico-connect';
export const PLAIN_COOKIE = 'portico-connect';
const MAX_ENTRIES = 4;
const ENTRY = /^([0-9a-f-]{36})\.([A-Za-z0-9_-]{43})$/;

export type Bindings = ReadonlyMap<string, string>;

export const cookieName = (secure: boolean): string => (secure ? SECURE_COOKIE : PLAIN_COOKIE);

/** The sign-ins a Cookie header binds to this browser, by session id (only the cookie of this scheme counts). */
export function readBindings(cookieHeader: string | undefined, secure: boolean): Bindings {
  const bindings = new Map<string, string>();
  const name = cookieName(secure);
  for (const pair of (cookieHeader ?? '').split(';')) {
    const at = pair.indexOf('=');
    if (at < 0 || pair.slice(0, at).trim() !== name) continue;
    for (const entry of pair
      .slice(at + 1)
      .trim()
      .split('~')) {
      const match = ENTRY.exec(entry);
      if (match && !bindings.has(match[1]!)) bindings.set(match[1]!, match[2]!);
    }
  }
  return bindings;
}

/**
 * The Set-Cookie value holding `bindings` (newest first, at most four), living `maxAgeSeconds`; an empty list
 * deletes the cookie.
 */
export function bindingCookie(bindings: Bindings, secure: boolean, maxAgeSeconds: number): string {
  const entries = [...bindings].slice(0, MAX_ENTRIES).map(([id, secret]) => `${id}.${secret}`);
  return cookieLine(cookieName(secure), entries.join('~'), {
    secure,
    maxAgeSeconds: entries.length === 0 ? 0 : maxAgeSeconds,
    sameSite: 'Lax',
  });
}

/** `bindings` with `sessionId`'s secret first (added), or without it (`secret` undefined). */
export function withBinding(bindings: Bindings, sessionId: string, secret?: string): Map<string, string> {
  const next = new Map<string, string>(secret === undefined ? [] : [[sessionId, secret]]);
  for (const [id, value] of bindings) if (id !== sessionId) next.set(id, value);
  return next;
}
