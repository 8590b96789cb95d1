// The admin surface, /api/admin/v1, behind PORTICO_ADMIN_TOKEN (mounted only when it is set): accounts, their keys
// and apps.
import { adminRoutes } from '../features/admin/admin.routes.js';
import { requireAdminToken } from '../shared/http/auth.js';
import { ApiRouter } from '../shared/http/openapi.js';

export type AdminContext = Parameters<typeof adminRoutes>[1];

export function adminSurface(token: string, context: AdminContext): ApiRouter {
  const admin = new ApiRouter('/api/admin/v1').use(requireAdminToken(token));
  adminRoutes(admin, context);
  return admin;
}
