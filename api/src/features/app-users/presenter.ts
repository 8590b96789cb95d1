import type { AppUser } from './store.js';

export function presentAppUser(appUserId: string, user: AppUser | null) {
  return {
    appUserId,
    state: user?.state ?? 'UNLINKED',
    connections: (user?.connections ?? []).map((c) => ({
      id: c.id,
      appId: c.appId,
      brandId: c.brandId,
      createdAt: c.createdAt.toISOString(),
    })),
    createdAt: user?.createdAt.toISOString() ?? null,
    updatedAt: user?.updatedAt.toISOString() ?? null,
    _version: String(user?.version ?? 0),
  };
}
