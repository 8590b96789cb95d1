// One behaviour suite per store interface, run against its MongoDB repository (on the embedded database, a
// database of its own per suite) and its in-memory fake (docs/architecture.md, "Stores and fakes"): the fake is
// what the services' unit tests run on, so it must keep the rules the repository keeps. The repository is the
// reference: where the two disagree, the fake is wrong. A case the fake cannot reasonably mirror is declared
// with `mongoOnly`, and shows as skipped for the fake with its reason in its name.
import { withTestDatabase, type TestDatabase } from './database.js';

export type StoreKind = 'MongoDB' | 'fake';

/** `M`: the repository's own type, for what `close` may need of it beyond the interface. */
export interface StoreImplementations<S, M extends S = S> {
  /** The repository's name in the report, how to open one on the suite's database, and what ends its work. */
  mongo: { name: string; open: (database: TestDatabase) => Promise<M>; close?: (store: M) => Promise<void> };
  fake: { name: string; open: () => Promise<S> };
}

export interface StoreCases<S> {
  /** The store under test, opened afresh before each case (the database is the suite's: use fresh ids). */
  store: () => S;
  /** The suite's database: for a MongoDB case that looks at what was written. */
  database: () => TestDatabase;
  kind: StoreKind;
  /** A case both implementations must pass. */
  it: (title: string, body: () => Promise<void>) => void;
  /** A case only the repository runs; the fake's report names it skipped, with `reason`. */
  mongoOnly: (title: string, reason: string, body: () => Promise<void>) => void;
}

/** Registers `cases` once for each implementation, under `title`. */
export function describeStore<S, M extends S = S>(
  title: string,
  implementations: StoreImplementations<S, M>,
  cases: (suite: StoreCases<S>) => void,
): void {
  describe(title, () => {
    let database: TestDatabase | undefined;
    withTestDatabase((opened) => (database = opened));
    const opened = (): TestDatabase => {
      if (!database) throw new Error('the test database is not open yet');
      return database;
    };
    for (const kind of ['MongoDB', 'fake'] as const) {
      const { name } = kind === 'MongoDB' ? implementations.mongo : implementations.fake;
      describe(name, () => {
        let store: S | undefined;
        let repository: M | undefined;
        beforeEach(async () => {
          if (kind === 'MongoDB') store = repository = await implementations.mongo.open(opened());
          else store = await implementations.fake.open();
        });
        // Work a repository goes on with after a case (a bundle applied after its answer) ends before the next.
        afterEach(async () => {
          if (repository !== undefined) await implementations.mongo.close?.(repository);
          store = repository = undefined;
        });
        cases({
          store: () => {
            if (store === undefined) throw new Error('the store is opened before each case');
            return store;
          },
          database: opened,
          kind,
          it: (caseTitle, body) => it(caseTitle, body),
          mongoOnly: (caseTitle, reason, body) =>
            kind === 'MongoDB' ? it(caseTitle, body) : it.skip(`${caseTitle} (not for the fake: ${reason})`),
        });
      });
    }
  });
}
