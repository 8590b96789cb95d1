// The small page a patient sees when a sign-in cannot go back to the app: plain HTML, no script, no resource from
// anywhere, readable at any width.
import { createHash } from 'node:crypto';

const PAGE_STYLE = 'body{font:16px/1.5 system-ui,sans-serif;margin:2rem auto;max-width:36rem;padding:0 1rem}';

/** Only the page's own style block may apply (by its hash); nothing may load, frame it or be submitted. */
export const PAGE_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(PAGE_STYLE).digest('base64')}'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`;

/** The sign-in's two public stops (sdk.routes.ts). */
const SIGN_IN_PATHS = /^\/api\/sdk\/v1\/connect\/(?:launch\/[^/]*|callback)$/;
export const isSignInPath = (path: string): boolean => SIGN_IN_PATHS.test(path);

/** Their request deadline: discovery and the token exchange have 10 s each, and a margin. */
export const SIGN_IN_DEADLINE_MS = 25_000;

export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const escape = escapeHtml;

export function renderPage(title: string, message: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · Portico</title><style>${PAGE_STYLE}</style></head>
<body><main><h1>${escape(title)}</h1><p>${escape(message)}</p></main></body></html>
`;
}

/** What the request deadline answers on those stops: a page, not problem details. */
export const SIGN_IN_DEADLINE_PAGE = {
  contentType: 'text/html; charset=utf-8',
  headers: { 'Content-Security-Policy': PAGE_CSP, 'Cache-Control': 'no-store' },
  body: renderPage(
    'Your health system is taking too long',
    'Your health system did not answer in time. Go back to the app and try again in a moment.',
  ),
};
