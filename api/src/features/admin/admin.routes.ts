// The admin surface's routes: accounts, their keys and apps (/openapi.json, tag Admin). The command line's
// `portico admin` calls the same AdminService.
import type { ApiRouter } from '../../shared/http/openapi.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import { validate } from '../../shared/http/validate.js';
import {
  Account,
  AccountList,
  AccountParams,
  AdminListQuery,
  AppList,
  KeyList,
  AccountWithStatus,
  App,
  AppParams,
  CreateAccount,
  CreateApp,
  CreatedApp,
  CreateKey,
  IssuedKey,
  KeyParams,
  UpdateAccount,
  UpdateApp,
} from './schema.js';
import { presentApp } from './presenter.js';
import type { AdminService } from './service.js';

const tags = ['Admin'];

export function adminRoutes(
  api: ApiRouter,
  { admin, idempotent }: { admin: AdminService } & Pick<RouteGuards, 'idempotent'>,
): void {
  const createAccount = validate({ body: CreateAccount });
  api.post(
    '/customer-accounts',
    {
      operationId: 'adminCreateCustomerAccount',
      summary: 'Create a customer account (tenant)',
      tags,
      responses: { 201: { description: 'Created.', schema: Account } },
    },
    createAccount,
    idempotent(),
    async (ctx) => {
      const account = await admin.createAccount(createAccount.get(ctx).body.name);
      ctx.status = 201;
      ctx.body = { id: account.id, name: account.name };
    },
  );

  const updateAccount = validate({
    params: AccountParams,
    body: UpdateAccount,
    bodyMediaTypes: ['application/merge-patch+json'],
  });
  api.patch(
    '/customer-accounts/:id',
    {
      operationId: 'adminUpdateCustomerAccount',
      summary: 'Suspend or reactivate a customer account',
      description:
        'While an account is SUSPENDED every credential of it (`sk_`, `pk_`, `ak_`) is refused on every route: 403 `PLATFORM_ACCESS_DENIED` on the platform surface, 401 on the SDK surface; on every replica within a second when Redis is configured. Reactivation restores them. Nothing of the account is deleted.',
      tags,
      responses: { 200: { description: 'The account.', schema: AccountWithStatus } },
    },
    updateAccount,
    idempotent(),
    async (ctx) => {
      const { params, body } = updateAccount.get(ctx);
      const account = await admin.setAccountStatus(params.id, body.status);
      ctx.body = { id: account.id, name: account.name, status: account.status };
    },
  );

  const issueKey = validate({ params: AccountParams, body: CreateKey });
  api.post(
    '/customer-accounts/:id/api-keys',
    {
      operationId: 'adminIssueApiKey',
      summary: 'Issue a secret platform key (sk_…), shown once',
      tags,
      responses: { 201: { description: 'Issued.', schema: IssuedKey } },
    },
    issueKey,
    idempotent(),
    async (ctx) => {
      const { params, body } = issueKey.get(ctx);
      ctx.status = 201;
      ctx.body = await admin.issueKey(params.id, body);
    },
  );

  const revoke = validate({ params: KeyParams });
  api.delete(
    '/api-keys/:keyId',
    {
      operationId: 'adminRevokeApiKey',
      summary: 'Revoke a key (sk_, pk_ or ak_)',
      tags,
      responses: { 204: { description: 'Revoked; the key stops working at once.' } },
    },
    revoke,
    idempotent(),
    async (ctx) => {
      await admin.revokeKey(revoke.get(ctx).params.keyId);
      ctx.status = 204;
    },
  );

  const createApp = validate({ params: AccountParams, body: CreateApp });
  api.post(
    '/customer-accounts/:id/apps',
    {
      operationId: 'adminCreateApp',
      summary: 'Register an app with its install grants',
      tags,
      responses: { 201: { description: 'Created with its keys, shown once.', schema: CreatedApp } },
    },
    createApp,
    idempotent(),
    async (ctx) => {
      const { params, body } = createApp.get(ctx);
      const { app, ...keys } = await admin.createApp(params.id, body.name, body.grants, body.redirectUris);
      ctx.status = 201;
      ctx.body = { ...presentApp(app), ...keys };
    },
  );

  const listing =
    'Newest first (`createdAt` desc, then id). Cursors are signed and bound to this list (and account); a tampered or foreign cursor → 400. No key is ever shown: keys are shown once, when made.';
  const page = <T>(items: T[], nextCursor: string | null) => ({
    data: items,
    pagination: { nextCursor, hasMore: nextCursor !== null },
  });

  const listAccounts = validate({ query: AdminListQuery });
  api.get(
    '/customer-accounts',
    {
      operationId: 'adminListCustomerAccounts',
      summary: 'List customer accounts',
      description: listing,
      tags,
      responses: { 200: { description: 'One page.', schema: AccountList } },
    },
    listAccounts,
    async (ctx) => {
      const { limit, cursor } = listAccounts.get(ctx).query;
      const { items, nextCursor } = await admin.listAccounts(limit, cursor);
      ctx.body = page(
        items.map(({ id, name, status, createdAt }) => ({ id, name, status, createdAt: createdAt.toISOString() })),
        nextCursor,
      );
    },
  );

  const listApps = validate({ params: AccountParams, query: AdminListQuery });
  api.get(
    '/customer-accounts/:id/apps',
    {
      operationId: 'adminListApps',
      summary: "List an account's apps (without their keys)",
      description: `${listing} An unknown account → 404.`,
      tags,
      responses: { 200: { description: 'One page.', schema: AppList } },
    },
    listApps,
    async (ctx) => {
      const { params, query } = listApps.get(ctx);
      const { items, nextCursor } = await admin.listApps(params.id, query.limit, query.cursor);
      ctx.body = page(items.map(presentApp), nextCursor);
    },
  );

  const listKeys = validate({ params: AccountParams, query: AdminListQuery });
  api.get(
    '/customer-accounts/:id/api-keys',
    {
      operationId: 'adminListApiKeys',
      summary: "List an account's keys: its sk_ and its apps' pk_ and ak_, revoked ones too (never the keys)",
      description: `${listing} An unknown account → 404.`,
      tags,
      responses: { 200: { description: 'One page.', schema: KeyList } },
    },
    listKeys,
    async (ctx) => {
      const { params, query } = listKeys.get(ctx);
      const { items, nextCursor } = await admin.listKeys(params.id, query.limit, query.cursor);
      ctx.body = page(
        items.map((k) => ({
          id: k.keyId,
          kind: k.kind,
          appId: k.appId,
          name: k.name,
          scopes: k.scopes,
          createdAt: k.createdAt.toISOString(),
          revokedAt: k.revokedAt?.toISOString() ?? null,
        })),
        nextCursor,
      );
    },
  );

  const updateApp = validate({ params: AppParams, body: UpdateApp, bodyMediaTypes: ['application/merge-patch+json'] });
  api.patch(
    '/apps/:id',
    {
      operationId: 'adminUpdateApp',
      summary: 'Suspend, reactivate or re-grant an app',
      description:
        "A `SUSPENDED` app's `pk_` and `ak_` keys get 401 on every route, the same 401 as an unknown key, and its connect sessions cannot be completed (409) until it is `ACTIVE` again; every replica hears of the change over Redis at once.",
      tags,
      responses: { 200: { description: 'The app.', schema: App } },
    },
    updateApp,
    idempotent(),
    async (ctx) => {
      const { params, body } = updateApp.get(ctx);
      ctx.body = presentApp(await admin.updateApp(params.id, body));
    },
  );
}
