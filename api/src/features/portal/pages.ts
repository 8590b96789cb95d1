// The patient's page as HTML (docs/connecting.md, "The patient's page"): server-rendered like Portico Connect, with its
// stylesheet and the same CSP, no script at all. Each "Stop sharing" is a form of its own (a POST to this origin,
// answered by a redirect back here); the log is a list in reading order, newest first.
import { ASSETS_PATH, escapeHtml as escape } from '../connections/index.js';
import { logoPath } from '../catalog/index.js';
import { readSentence, when } from './plain-log.js';
import { PORTAL_PATH, type PortalView, type Refusal, type SharedConnection } from './service.js';

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · Portico</title><link rel="stylesheet" href="${ASSETS_PATH}/connect.css">
<link rel="stylesheet" href="${ASSETS_PATH}/portal.css"></head>
<body><main>${body}</main></body></html>
`;
}

function connectionItem(connection: SharedConnection, formToken: string): string {
  const logo = connection.hasLogo
    ? `<img class="logo" src="${escape(logoPath(connection.brandId))}?size=64" alt="" width="40" height="40">`
    : '';
  const synced = connection.lastSyncedAt
    ? `Last updated <time datetime="${connection.lastSyncedAt.toISOString()}">${escape(when(connection.lastSyncedAt))}</time>.`
    : 'Not updated yet.';
  const shared =
    connection.shared.length > 0
      ? `<p>${escape(connection.appName)} can read:</p><ul class="types">${connection.shared.map((s) => `<li>${escape(s)}</li>`).join('')}</ul>`
      : `<p>${escape(connection.appName)} cannot read any of your records.</p>`;
  const action = `${PORTAL_PATH}/connections/${connection.id}/stop?token=${encodeURIComponent(formToken)}`;
  return `<li class="connection">
<h3 class="brand">${logo}<span>${escape(connection.brandName)}</span></h3>
<p>Shared with ${escape(connection.appName)} until you stop sharing. ${synced}${connection.needsReconnect ? ' The app needs you to sign in again before it gets anything new.' : ''}</p>
${shared}
<form method="post" action="${escape(action)}"><button type="submit" class="stop">Stop sharing<span class="visually-hidden"> ${escape(connection.brandName)} with ${escape(connection.appName)}</span></button></form>
</li>`;
}

export function renderPortal(view: PortalView, notice?: string): string {
  const connections =
    view.connections.length > 0
      ? `<ul class="connections">${view.connections.map((c) => connectionItem(c, view.formToken)).join('\n')}</ul>`
      : '<p>You are not sharing records from any health system.</p>';
  const reads =
    view.reads.length > 0
      ? `<ol class="reads">${view.reads
          .map(
            ({ entry, names }) =>
              `<li${entry.denied === undefined ? '' : ' class="refused"'}><time datetime="${entry.createdAt.toISOString()}">${escape(when(entry.createdAt))}</time> ${escape(readSentence(entry, names))}</li>`,
          )
          .join('\n')}</ol>`
      : '<p>No app has read your records yet.</p>';
  return page(
    'Your shared health records',
    `<h1>Your shared health records</h1>
<p class="lead">See which apps can read your health records, who read them and when, and stop sharing at any time.</p>
${notice ? `<p class="notice" role="status">${escape(notice)}</p>` : ''}
<section aria-labelledby="shared">
<h2 id="shared">Health systems you share</h2>
${connections}
</section>
<section aria-labelledby="reads">
<h2 id="reads">Who read your records</h2>
${reads}
<p><a href="${PORTAL_PATH}/access-log.json" download="access-log.json">Download your log (FHIR JSON, the newest 10,000 reads)</a></p>
</section>`,
  );
}

const REFUSED: Record<Refusal, [string, string]> = {
  link_invalid: ['This link is not valid', 'Open “Manage sharing” in the app again to get a new link.'],
  link_used: [
    'This link was already used',
    'Each link opens your page once. Open “Manage sharing” in the app again to get a new link.',
  ],
  link_expired: [
    'This link has expired',
    'A link opens your page for 15 minutes. Open “Manage sharing” in the app again to get a new link.',
  ],
  page_expired: [
    'This page has expired',
    'Your page stays open for 15 minutes. Open “Manage sharing” in the app again to see it.',
  ],
};

export function renderRefusal(refusal: Refusal): string {
  const [title, message] = REFUSED[refusal];
  return page(title, `<h1>${escape(title)}</h1>\n<p>${escape(message)}</p>`);
}
