// A recovery point on a generation (a connection's head, api/src/features/clinical/records/bundle-heads.ts) is decided by the
// head's last commit and its list of generations that never committed, so a commit is still known after any
// number of later ones (the `_changes` ring remembers 16).
import { expect } from 'chai';
import { committedGeneration } from '../../../../api/src/shared/infra/change-scope.js';

describe('change scope: generation recovery points', () => {
  const at = new Date('2026-11-26T09:00:00Z');

  it('a generation up to the last commit committed unless it is listed as abandoned', () => {
    const head = {
      _version: 40,
      abandoned: [
        { gen: 7, at },
        { gen: 21, at },
      ],
    };
    expect(committedGeneration(head, 3)).to.equal(true);
    expect(committedGeneration(head, 40)).to.equal(true);
    expect(committedGeneration(head, 7)).to.equal(false);
    expect(committedGeneration(head, 21)).to.equal(false);
  });

  it('a generation after the last commit, or of a head that does not exist, did not commit', () => {
    expect(committedGeneration({ _version: 40, abandoned: [] }, 41)).to.equal(false);
    expect(committedGeneration(null, 1)).to.equal(false);
  });
});
