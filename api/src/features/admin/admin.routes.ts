// The admin surface's routes: accounts, their keys and apps (/openapi.json, tag Admin). The command line's
// `portico admin` calls the same AdminService.
import type { ApiRouter } from '../../shared/http/openapi.js';
import type { RouteGuards } from '../../shared/http/route-guards.js';
import { validate } from '../../shared/http/validate.js';
import {
  Account,
  AccountParams,
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
      const { app, ...keys } = await admin.createApp(params.id, body.name, body.grants);
      ctx.status = 201;
      ctx.body = { ...presentApp(app), ...keys };
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
