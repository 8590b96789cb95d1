// What a link token binds an initiate to (docs/connecting.md, "Link tokens"): every bound field must match, a token
// without a brand leaves the brand open, and one without a connection reconnects none.
import { expect } from 'chai';
import type { LinkToken } from '../../../../api/src/features/connect-sessions/link-token-store.js';
import { mismatchesOf } from '../../../../api/src/features/connect-sessions/link-tokens.js';

const token = (over: Partial<LinkToken> = {}): LinkToken => ({
  hash: 'h',
  accountId: 'acc',
  appId: 'app-1',
  appUserId: 'user-1',
  redirectUri: 'https://app.example.com/back',
  brandId: null,
  connectionId: null,
  createdAt: new Date(0),
  expiresAt: new Date(1),
  usedAt: null,
  sessionId: null,
  ...over,
});
const asked = { appUserId: 'user-1', redirectUri: 'https://app.example.com/back' };

describe('link tokens: what a token binds', () => {
  it('admits the initiate it was minted for', () => {
    expect(mismatchesOf(token(), 'app-1', asked)).to.deep.equal([]);
    expect(mismatchesOf(token(), 'app-1', { ...asked, brandId: 'b-1' }), 'no brand bound: any').to.deep.equal([]);
    expect(mismatchesOf(token({ brandId: 'b-1' }), 'app-1', { ...asked, brandId: 'b-1' })).to.deep.equal([]);
    const reconnect = token({ brandId: 'b-1', connectionId: 'c-1' });
    expect(mismatchesOf(reconnect, 'app-1', { ...asked, brandId: 'b-1', connectionId: 'c-1' })).to.deep.equal([]);
  });

  it('names every field the initiate asks otherwise', () => {
    expect(mismatchesOf(token(), 'app-2', asked)).to.deep.equal(['appId']);
    expect(mismatchesOf(token(), 'app-1', { ...asked, appUserId: 'USER-1' })).to.deep.equal(['appUserId']);
    expect(mismatchesOf(token(), 'app-1', { ...asked, redirectUri: 'https://app.example.com/other' })).to.deep.equal([
      'redirectUri',
    ]);
    expect(mismatchesOf(token({ brandId: 'b-1' }), 'app-1', { ...asked, brandId: 'b-2' })).to.deep.equal(['brandId']);
    expect(mismatchesOf(token({ brandId: 'b-1' }), 'app-1', asked), 'the bound brand left out').to.deep.equal([
      'brandId',
    ]);
    expect(mismatchesOf(token(), 'app-1', { ...asked, connectionId: 'c-1' }), 'no reconnect bound').to.deep.equal([
      'connectionId',
    ]);
    expect(mismatchesOf(token({ connectionId: 'c-1' }), 'app-1', asked), 'the reconnect left out').to.deep.equal([
      'connectionId',
    ]);
  });
});
