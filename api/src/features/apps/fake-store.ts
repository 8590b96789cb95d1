// In-memory AppStore for unit tests of the admin service; test/api/features/apps/store.test.ts holds it and
// AppRepository to the same behaviour.
import { MemoryVersioned } from '../../shared/infra/memory-versioned.js';
import { keysetSlice, type KeysetPage, type KeysetPosition } from '../../shared/infra/keyset.js';
import type { App, AppChanges, AppStore } from './store.js';

export class FakeAppStore implements AppStore {
  private readonly apps = new MemoryVersioned<App & { deletedAt: Date | null }>();

  async insert(app: App): Promise<void> {
    this.apps.insert(app.id, { ...app, deletedAt: null });
  }

  async get(id: string): Promise<App | null> {
    return strip(this.apps.get(id));
  }

  async find(id: string): Promise<App | null> {
    return this.get(id);
  }

  async update(id: string, changes: AppChanges, at: Date): Promise<App | null> {
    return strip(this.apps.update(id, 'any', changes, at));
  }

  async listByAccount(accountId: string, limit: number, after?: KeysetPosition): Promise<KeysetPage<App>> {
    const mine = this.apps.all().filter((app) => app.accountId === accountId && app.deletedAt === null);
    const page = keysetSlice(mine, (app) => app, limit, after);
    return { items: page.items.map((app) => strip(app)!), hasMore: page.hasMore };
  }
}

function strip(entry: (App & { deletedAt: Date | null }) | null): App | null {
  if (!entry) return null;
  const { deletedAt: _deletedAt, ...app } = entry;
  return app;
}
