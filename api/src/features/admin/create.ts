// The admin surface's service, built (docs/architecture.md, "One shape for a feature"): it has no store of its own,
// and works on the accounts', keys', apps' and authorization's.
import type { Infrastructure } from '../../shared/infra/infrastructure.js';
import { ADMIN_CURSORS, AdminService, type AdminServiceDeps } from './service.js';

export function createAdmin(
  { clock, generations }: Infrastructure,
  uses: Pick<AdminServiceDeps, 'accounts' | 'keys' | 'apps' | 'authz' | 'syncs'>,
): AdminService {
  return new AdminService({ ...uses, generations, cursors: ADMIN_CURSORS, clock });
}
