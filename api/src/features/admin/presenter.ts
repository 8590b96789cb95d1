import type { App } from '../apps/index.js';

/** An app as the admin surface and `portico admin` show it. */
export const presentApp = (app: App) => ({
  id: app.id,
  name: app.name,
  grants: app.grants,
  status: app.status,
  redirectUris: app.redirectUris,
});
