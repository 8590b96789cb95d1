// The patient's choice on Portico Connect's consent page (docs/connecting.md, "Consent before sign-in"): shown once the
// brand is known, before any request to the health system. The app opens authorizeUrl and could add any parameter
// to it, so the choice is a double-submit value: the page sets a fresh random value in a cookie only this origin
// reads, and its Continue and "Don't share" links carry the same value; a launch goes on only when the two match.
// The links are plain GETs: a form's submission would put the redirect to the health system under the page's
// `form-action` in Chromium.
//
// `__Host-portico-consent` (Secure, HttpOnly, SameSite=Lax, path /, no Domain) where the browser reaches Portico over
// https; over plain http in development `portico-consent` without Secure, as browser-binding.ts chooses.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { CatalogBrand } from '#core/catalog/model.js';
import { cookieLine, readCookie } from '../../../shared/http/cookies.js';
import type { App } from '../../apps/index.js';
import { plainCategories } from '../../clinical/index.js';
import type { LaunchOutcome } from './outcomes.js';

export const SECURE_CONSENT_COOKIE = '__Host-portico-consent';
export const PLAIN_CONSENT_COOKIE = 'portico-consent';
/** The longest a consent page's value lives (a session lives 30 minutes). */
export const CONSENT_MAX_AGE_SECONDS = 30 * 60;
const VALUE = /^[A-Za-z0-9_-]{43}$/;

const cookieName = (secure: boolean): string => (secure ? SECURE_CONSENT_COOKIE : PLAIN_CONSENT_COOKIE);

/** The consent page for `app`'s sign-in at `brand`, with a fresh value (256 random bits) living until `expiresAt`. */
export function consentPage(app: App, brand: CatalogBrand, expiresAt: Date): LaunchOutcome {
  return {
    kind: 'consent',
    appName: app.name,
    brandId: brand.id,
    brandName: brand.name,
    logo: brand.logo !== null,
    categories: plainCategories(app.grants.resourceTypes),
    value: randomBytes(32).toString('base64url'),
    expiresAt,
  };
}

/** The consent value this browser holds (only the cookie of this scheme counts). */
export function readConsent(cookieHeader: string | undefined, secure: boolean): string | undefined {
  const value = readCookie(cookieHeader, cookieName(secure));
  return value !== undefined && VALUE.test(value) ? value : undefined;
}

/** The Set-Cookie value holding `value` for `maxAgeSeconds` (at most 30 minutes); no value deletes the cookie. */
export function consentCookie(value: string | undefined, secure: boolean, maxAgeSeconds = 0): string {
  return cookieLine(cookieName(secure), value ?? '', {
    secure,
    maxAgeSeconds: value === undefined ? 0 : Math.min(CONSENT_MAX_AGE_SECONDS, maxAgeSeconds),
    sameSite: 'Lax',
  });
}

/** Whether the link's value is the one the browser holds, compared in constant time. */
export function consentGiven(given: string | undefined, held: string | undefined): boolean {
  if (given === undefined || held === undefined || !VALUE.test(given)) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(held);
  return a.length === b.length && timingSafeEqual(a, b);
}
