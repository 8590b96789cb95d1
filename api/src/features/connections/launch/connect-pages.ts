// Portico Connect (docs/connecting.md, "Portico Connect"): the hosted picker an authorizeUrl opens when the app named
// no brand, the consent page before the health system's sign-in, and the end page a sign-in begun in the picker
// ends on. Server-rendered HTML with one small script and one
// stylesheet (assets/connect at the repository's root, staged into the image), the lightest thing that stays maintainable: no build step, no framework, nothing
// from elsewhere. The CSP admits only this origin's script, style, images and searches.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '#core/infra/repo-root.js';

export const ASSETS_PATH = '/api/sdk/v1/connect/assets';
/** The catalog's logos, as the picker shows them (`logoUrl` of a brand, features/catalog). */
const LOGOS_PATH = '/api/sdk/v1/catalog/brands';
const ASSETS_DIR = path.join(repoRoot(), 'assets', 'connect');

/**
 * The pages' CSP. Logos may also come from the deployment's own object storage or CDN (`publicUrl` of
 * PORTICO_OBJECT_STORAGE, where logo redirects lead) and from PUBLIC_BASE_URL: `imageOrigins`.
 */
export function connectCsp(imageOrigins: readonly string[] = []): string {
  const images = ["'self'", ...new Set(imageOrigins)].join(' ');
  return `default-src 'none'; script-src 'self'; style-src 'self'; img-src ${images}; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`;
}

/** The origins logos are served from besides this one: the object store's public URL, PUBLIC_BASE_URL. */
export function imageOriginsOf(publicUrl: (key: string) => string, publicBaseUrl: string | undefined): string[] {
  const origins: string[] = [];
  try {
    const sample = publicUrl(`logo-${'0'.repeat(64)}.png`);
    if (URL.canParse(sample)) origins.push(new URL(sample).origin);
  } catch {
    // a store without public URLs serves logos through the API: 'self'
  }
  if (publicBaseUrl !== undefined) origins.push(new URL(publicBaseUrl).origin);
  return origins;
}

export interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const TYPES: Record<string, string> = {
  'picker.js': 'text/javascript; charset=utf-8',
  'end.js': 'text/javascript; charset=utf-8',
  'connect.css': 'text/css; charset=utf-8',
  // The patient's own page (features/portal) adds its own rules to connect.css's.
  'portal.css': 'text/css; charset=utf-8',
};
let assets: Map<string, Asset> | undefined;

/** The page's script and stylesheet, read once; undefined for any other name. */
export function asset(name: string): Asset | undefined {
  assets ??= new Map(
    Object.entries(TYPES).map(([file, type]) => {
      const body = readFileSync(path.join(ASSETS_DIR, file));
      return [file, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` }];
    }),
  );
  return assets.get(name);
}

import { escapeHtml as escape } from './page.js';

function page(title: string, body: string, head = ''): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · Portico Connect</title><link rel="stylesheet" href="${ASSETS_PATH}/connect.css">${head}</head>
<body><main>${body}</main></body></html>
`;
}

/** The picker: a search box, "near a ZIP code", and the results list the script fills. */
export function renderPicker(appName: string, notice?: string): string {
  return page(
    'Find your health system',
    `<h1>Find your health system</h1>
<p class="lead">${escape(appName)} asks to connect to your health records. Sign in at your health system to share them.</p>
${notice ? `<p class="notice" role="alert">${escape(notice)}</p>` : ''}
<form id="search" role="search">
<label for="q">Search for your health system</label>
<input id="q" name="q" type="search" role="combobox" aria-autocomplete="list" aria-expanded="false" aria-controls="results" autocomplete="off" spellcheck="false" placeholder="Hospital, clinic or city">
<div class="near"><label for="near">Near a ZIP code (optional)</label>
<input id="near" name="near" inputmode="numeric" autocomplete="postal-code" maxlength="5" pattern="[0-9]{5}"></div>
</form>
<p id="status" class="status" role="status" aria-live="polite"></p>
<ul id="results" role="listbox" aria-label="Health systems"></ul>
<p class="no-script">This page needs JavaScript to search.</p>
<script type="module" src="${ASSETS_PATH}/picker.js"></script>`,
  );
}

/**
 * The consent page: who asks, what they may read, for how long, and the two answers. Both are links carrying the
 * page's value (consent.ts) back to this authorizeUrl; a query-only link keeps its path and token.
 */
export function renderConsent(consent: {
  appName: string;
  brandId: string;
  brandName: string;
  logo: boolean;
  categories: readonly string[];
  value: string;
}): string {
  const app = escape(consent.appName);
  const brand = escape(consent.brandName);
  const answer = (decline: boolean) => {
    const query = new URLSearchParams({ brand: consent.brandId, consent: consent.value });
    if (decline) query.set('decline', '1');
    return escape(`?${query.toString()}`);
  };
  const logo = consent.logo
    ? `<img class="logo" src="${LOGOS_PATH}/${encodeURIComponent(consent.brandId)}/logo?size=64" alt="" width="40" height="40">`
    : '';
  const reads =
    consent.categories.length > 0
      ? `<ul class="reads">${consent.categories.map((words) => `<li>${escape(words)}</li>`).join('')}</ul>`
      : `<p>None yet: ${app} may not read any of your records.</p>`;
  return page(
    `Share your records with ${consent.appName}?`,
    `<p class="from">${logo}<span>${brand}</span></p>
<h1>Share your records with ${app}?</h1>
<p class="lead">${app} asks to read your health records from ${brand}. If you continue, you sign in at ${brand}, and Portico shares your records with ${app}.</p>
<h2>What ${app} may read</h2>
${reads}
<h2>For how long</h2>
<p>Until you stop sharing. You can stop sharing at any time from ${app}.</p>
<p class="choices"><a class="button" id="continue" href="${answer(false)}">Continue to ${brand}</a>
<a class="button secondary" id="decline" href="${answer(true)}">Don't share</a></p>`,
  );
}

/**
 * The end page: the outcome in words, and a link on to the app. The patient follows it (no timed redirect: a page
 * that moves on by itself fails those who read slowly, WCAG 2.2.1); in the SDK's popup, end.js posts the outcome
 * to the app, which closes the popup.
 */
export function renderEnd(outcome: {
  location: string;
  connected: boolean;
  brandName: string | undefined;
  error: string | undefined;
}): string {
  const where = outcome.brandName ? escape(outcome.brandName) : 'your health system';
  const title = outcome.connected ? `Connected to ${outcome.brandName ?? 'your health system'}` : 'Not connected';
  const message = outcome.connected
    ? `Your records from ${where} are now shared with the app. You can stop sharing at any time from the app.`
    : outcome.error === 'access_denied'
      ? `You chose not to share your records from ${where}. Nothing was connected. You can connect from the app whenever you like.`
      : `The connection to ${where} was not made. You can try again from the app.`;
  return page(
    title,
    `<div class="outcome-${outcome.connected ? 'connected' : 'failed'}">
<h1>${escape(title)}</h1>
<p role="status">${message}</p>
<a class="button" id="return" href="${escape(outcome.location)}">Return to the app</a>
</div>
<script type="module" src="${ASSETS_PATH}/end.js"></script>`,
  );
}
