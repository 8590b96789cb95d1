// The sandbox's only HTML: the sign-in page a patient sees at the EHR, and the error page for a request that
// cannot be sent back to the app. Server-rendered, no external resources, no script; the style is covered by
// its hash in a strict Content-Security-Policy.
import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import type { SandboxPatient } from './types.js';

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f6f8;color:#1b1f23}
main{max-width:26rem;margin:0 auto;padding:1.5rem 1rem}
h1{font-size:1.35rem;margin:0 0 .25rem}
.box{background:#fff;border:1px solid #ccd3da;border-radius:8px;padding:1rem;margin:1rem 0}
.sandbox{background:#fff8db;border-color:#e3c65b}
.error{background:#fde8e8;border-color:#e08b8b}
label{display:block;font-weight:600;margin-top:.75rem}
input{box-sizing:border-box;width:100%;font:inherit;padding:.55rem;border:1px solid #8a96a3;border-radius:6px}
.actions{display:flex;gap:.75rem;margin-top:1.25rem}
button{flex:1;font:inherit;padding:.65rem;border-radius:6px;border:1px solid #1f5fa8;cursor:pointer}
.allow{background:#1f5fa8;color:#fff}.deny{background:#fff;color:#1f5fa8}
code{font-size:.95em}ul{padding-left:1.2rem;margin:.25rem 0}
`;
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * Sends a page. No form-action: browsers apply it to every redirect that follows a submission, and the sign-in's
 * redirects go on past the client's callback (Portico's) to wherever the client sends the browser next (the app),
 * an origin the EHR cannot know; a real EHR's sign-in page does not restrict it either.
 */
function send(ctx: Context, status: number, title: string, body: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set(
    'Content-Security-Policy',
    ["default-src 'none'", `style-src 'sha256-${STYLE_HASH}'`, "frame-ancestors 'none'", "base-uri 'none'"].join('; '),
  );
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Cache-Control', 'no-store');
  ctx.body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main>${body}</main></body></html>`;
}

export interface SignInPage {
  brandName: string;
  clientId: string;
  /** The client's registered name, shown in place of its id. */
  clientName?: string;
  scope: string;
  requestId: string;
  redirectUri: string;
  patients: SandboxPatient[];
  error?: string;
  username?: string;
}

export function sendSignInPage(ctx: Context, page: SignInPage): void {
  const credentials = page.patients
    .map(
      (p) =>
        `<li><code>${escapeHtml(p.username)}</code> / <code>${escapeHtml(p.password)}</code> (${escapeHtml(p.name)})</li>`,
    )
    .join('');
  const scopes = page.scope
    .split(' ')
    .map((s) => `<li><code>${escapeHtml(s)}</code></li>`)
    .join('');
  const error = page.error ? `<p class="box error" role="alert">${escapeHtml(page.error)}</p>` : '';
  send(
    ctx,
    200,
    `Sign in to ${page.brandName}`,
    `<h1>Sign in to ${escapeHtml(page.brandName)}</h1>
<p>The app <strong>${escapeHtml(page.clientName ?? page.clientId)}</strong> asks to read your health records.</p>
<section class="box sandbox" aria-label="Sandbox credentials"><strong>Sandbox credentials:</strong>
<ul>${credentials}</ul>This is a sandbox with synthetic patients; no real records are here.</section>
${error}
<form class="box" method="post" action="authorize">
<input type="hidden" name="id" value="${escapeHtml(page.requestId)}">
<label for="username">Username</label>
<input id="username" name="username" autocomplete="username" required value="${escapeHtml(page.username ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<p>It will be able to see:</p><ul>${scopes}</ul>
<div class="actions">
<button class="allow" type="submit" name="decision" value="allow">Allow</button>
<button class="deny" type="submit" name="decision" value="deny" formnovalidate>Deny</button>
</div></form>`,
  );
}

export function sendErrorPage(ctx: Context, status: number, message: string): void {
  send(
    ctx,
    status,
    'Sign-in request refused',
    `<h1>This sign-in request cannot continue</h1><p class="box error" role="alert">${escapeHtml(message)}</p>`,
  );
}
