// In-memory AppStore for unit tests of the admin service; test/api/features/apps/store.test.ts holds it and
// AppRepository to the same behaviour.
import { MemoryVersioned } from '../../shared/infra/memory-versioned.js';
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
}

function strip(entry: (App & { deletedAt: Date | null }) | null): App | null {
  if (!entry) return null;
  const { deletedAt: _deletedAt, ...app } = entry;
  return app;
}
