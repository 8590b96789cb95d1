// The small page a patient sees when a sign-in cannot go back to the app: plain HTML, no script, no resource from
// anywhere, readable at any width.
const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

import { createHash } from 'node:crypto';

const PAGE_STYLE = 'body{font:16px/1.5 system-ui,sans-serif;margin:2rem auto;max-width:36rem;padding:0 1rem}';

/** Only the page's own style block may apply (by its hash); nothing may load, frame it or be submitted. */
export const PAGE_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(PAGE_STYLE).digest('base64')}'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`;

export function renderPage(title: string, message: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · Portico</title><style>${PAGE_STYLE}</style></head>
<body><main><h1>${escape(title)}</h1><p>${escape(message)}</p></main></body></html>
`;
}
