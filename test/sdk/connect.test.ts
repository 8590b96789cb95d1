// connect() and readConnectOutcome(): the popup flow with a stand-in window against a real API and the sandbox
// EHR (the patient's browser steps are made over HTTP, carrying the binding cookie; a real browser's test is
// test/browser's), the redirect mode, the link token the app's backend mints for each connect() (and the API's
// refusals of a missing, bogus, spent or mismatched one), and the parsing of the URL the browser comes back to.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import {
  createPortico,
  POPUP_FEATURES,
  POPUP_NAME,
  PorticoError,
  readConnectOutcome,
  type ConnectOutcome,
  type ConnectPopup,
  type ConnectWindow,
  type Portico,
} from '../../sdk/js/src/index.js';
import { signIn } from '../../testkit/sandbox-ehr.js';
import {
  APP_RETURN,
  CookieJar,
  mintLinkToken,
  startSmartWorld,
  throughConsent,
  visit,
  type SmartWorld,
} from '../../testkit/smart.js';
import { Ticks } from './support/ticks.js';

/**
 * A popup whose location, like a real one's, cannot be read while it shows another origin's page. It opens on
 * about:blank (connect() opens it before its network call) and `opened` is where connect() then sent it.
 */
class FakePopup implements ConnectPopup {
  closed = false;
  at: string | undefined;
  opened: string;
  constructor(first: string) {
    this.opened = first;
    this.at = first;
  }
  get location(): { href: string } {
    const at = this.at;
    if (at === undefined)
      throw new DOMException('Blocked a frame from accessing a cross-origin frame', 'SecurityError');
    const navigate = (url: string) => {
      this.opened = url;
      this.at = undefined; // now on another origin's page
    };
    return {
      get href() {
        return at;
      },
      set href(url: string) {
        navigate(url);
      },
    };
  }
  close(): void {
    this.closed = true;
  }
}

class FakeWindow implements ConnectWindow {
  readonly popups: { popup: FakePopup; target: string; features: string }[] = [];
  readonly assigned: string[] = [];
  blocked = false;
  readonly location = {
    href: 'https://app.example.com/settings',
    assign: (url: string) => void this.assigned.push(url),
  };
  open(url: string, target: string, features: string): FakePopup | null {
    if (this.blocked) return null;
    const popup = new FakePopup(url);
    this.popups.push({ popup, target, features });
    return popup;
  }
}

describe('sdk/js: connect()', () => {
  let world: SmartWorld;
  let ticks: Ticks;
  let now: number;
  let portico: Portico;

  before(async () => {
    world = await startSmartWorld();
  });
  after(() => world.close());
  beforeEach(() => {
    ticks = new Ticks();
    now = Date.now();
    portico = createPortico({
      baseUrl: world.api.url,
      publishableKey: world.app.pk,
      sleep: ticks.sleep,
      now: () => now,
    });
  });

  /** The app's backend mints the user's link token (secret key); the page then calls connect() with it. */
  async function popupConnect(win: FakeWindow, appUserId = `sdk-connect-${randomUUID()}`, brand = 'public-v2') {
    const linkToken = await mintLinkToken(world, appUserId);
    return {
      appUserId,
      outcome: portico.connect({
        linkToken,
        appUserId,
        brandId: world.brands[brand]!,
        redirectUri: APP_RETURN,
        mode: 'popup',
        window: win,
      }),
    };
  }

  /**
   * What the patient's browser does in the popup: Portico's consent page and launch (which sets the binding cookie), the EHR's
   * sign-in, the callback (with the cookie, as the same browser).
   */
  async function signInThrough(authorizeUrl: string, decision: 'allow' | 'deny' = 'allow'): Promise<string> {
    const browser = new CookieJar();
    const launched = await throughConsent(authorizeUrl, browser);
    expect(launched.status, launched.text).to.equal(302);
    const callback = await signIn(launched.location!.href, { decision });
    const back = await visit(callback.href, browser);
    expect(back.status, back.text).to.equal(303);
    return back.location!.href;
  }

  async function refusal(outcome: Promise<unknown>): Promise<PorticoError> {
    const error = await outcome.then(
      () => expect.fail('connect() resolved'),
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(PorticoError);
    return error as PorticoError;
  }

  const lifecycle = async (appUserId: string) =>
    (await world.api.request('GET', `/api/sdk/v1/app-users/${appUserId}/lifecycle`, { key: world.app.pk })).body.state;

  it('initiateConnect with a redirectUri and a link token returns the authorizeUrl', async () => {
    const appUserId = `sdk-${randomUUID()}`;
    const session = await portico.initiateConnect({
      appUserId,
      brandId: world.brands['public-v2']!,
      redirectUri: APP_RETURN,
      linkToken: await mintLinkToken(world, appUserId),
    });
    expect(session.authorizeUrl)
      .to.be.a('string')
      .and.to.match(/^http:\/\/127\.0\.0\.1:\d+\/api\/sdk\/v1\/connect\//);
  });

  it('popup: opens authorizeUrl, waits while the popup is elsewhere, resolves connected when it is back', async () => {
    const win = new FakeWindow();
    const { appUserId, outcome } = await popupConnect(win);
    expect(await ticks.asleep()).to.equal(250);
    const [{ popup, target, features }] = win.popups as [FakeWindow['popups'][number]];
    expect(target).to.equal(POPUP_NAME).and.to.equal('portico-connect');
    expect(features).to.equal(POPUP_FEATURES).and.to.equal('popup,width=480,height=720');
    const back = await signInThrough(popup.opened);
    expect(await ticks.step()).to.equal(250); // still cross-origin: polling goes on
    expect(await ticks.step()).to.equal(250);
    popup.at = back;
    ticks.release();
    const result = await outcome;
    expect(result.status).to.equal('connected');
    const { sessionId, connectionId } = result as Extract<ConnectOutcome, { status: 'connected' }>;
    expect(back).to.include(`session=${sessionId}`).and.to.include(`connectionId=${connectionId}`);
    expect(popup.closed).to.be.true;
    const user = await world.api.request('GET', `/api/platform/v1/app-users/${appUserId}`, { key: world.tenant.key });
    expect(user.body.state).to.equal('ACTIVE');
    expect(user.body.connections.map((c: { id: string }) => c.id)).to.include(connectionId);
  });

  it('popup: resolves failed with the error the browser came back with', async () => {
    const win = new FakeWindow();
    const { outcome } = await popupConnect(win);
    await ticks.asleep();
    const popup = win.popups[0]!.popup;
    popup.at = await signInThrough(popup.opened, 'deny');
    ticks.release();
    const result = await outcome;
    expect(result).to.deep.include({ status: 'failed', error: 'access_denied' });
    expect(popup.closed).to.be.true;
  });

  it('popup: ignores the app’s own page when it is not the return of this session', async () => {
    const win = new FakeWindow();
    const { outcome } = await popupConnect(win);
    await ticks.asleep();
    const popup = win.popups[0]!.popup;
    popup.at = 'https://app.example.com/connected?from=portico&session=another&status=connected&connectionId=x';
    await ticks.step();
    popup.at = 'about:blank';
    await ticks.step();
    popup.closed = true;
    ticks.release();
    expect(await outcome).to.deep.include({ status: 'closed' });
  });

  it('popup: resolves closed when the patient closes it', async () => {
    const win = new FakeWindow();
    const { outcome } = await popupConnect(win);
    await ticks.asleep();
    win.popups[0]!.popup.closed = true;
    ticks.release();
    const result = await outcome;
    expect(result.status).to.equal('closed');
    expect(result.sessionId).to.be.a('string');
  });

  it('popup: gives up when the session expires, closing the popup', async () => {
    const win = new FakeWindow();
    const { outcome } = await popupConnect(win);
    await ticks.asleep();
    await ticks.step();
    now += 31 * 60_000; // past the session's expiresAt
    ticks.release();
    expect(await outcome).to.deep.include({ status: 'failed', error: 'session_expired' });
    expect(win.popups[0]!.popup.closed).to.be.true;
  });

  it('popup: a blocked popup is a PorticoError', async () => {
    const win = new FakeWindow();
    win.blocked = true;
    const error = await refusal((await popupConnect(win)).outcome);
    expect(error).to.include({ code: 'POPUP_BLOCKED', status: 0 });
  });

  it('popup: refuses a redirectUri on another origin before opening anything', async () => {
    const win = new FakeWindow();
    const appUserId = `sdk-${randomUUID()}`;
    const error = await refusal(
      portico.connect({
        linkToken: await mintLinkToken(world, appUserId),
        appUserId,
        redirectUri: 'https://elsewhere.example/back',
        mode: 'popup',
        window: win,
      }),
    );
    expect(error).to.include({ code: 'REDIRECT_URI_ORIGIN', status: 0 });
    expect(win.popups).to.have.length(0);
  });

  it('redirect: sends the page to authorizeUrl', async () => {
    const win = new FakeWindow();
    const appUserId = `sdk-${randomUUID()}`;
    const started = await portico.connect({
      linkToken: await mintLinkToken(world, appUserId),
      appUserId,
      brandId: world.brands['public-v2']!,
      redirectUri: APP_RETURN,
      mode: 'redirect',
      window: win,
    });
    expect(started.status).to.equal('redirected');
    expect(win.assigned).to.have.length(1);
    expect(win.popups).to.have.length(0);
    // The page at redirectUri reads the outcome once the patient is back.
    const back = await signInThrough(win.assigned[0]!);
    expect(readConnectOutcome(back)).to.deep.include({ status: 'connected', sessionId: started.sessionId });
  });

  describe('the link token', () => {
    it('an unknown one rejects with the API’s LINK_TOKEN_INVALID, the popup closes, and the user stays UNLINKED', async () => {
      const win = new FakeWindow();
      const appUserId = `sdk-${randomUUID()}`;
      const error = await refusal(
        portico.connect({
          linkToken: `lt_${'A'.repeat(40)}`,
          appUserId,
          brandId: world.brands['public-v2']!,
          redirectUri: APP_RETURN,
          mode: 'popup',
          window: win,
        }),
      );
      expect(error).to.include({ status: 400, code: 'LINK_TOKEN_INVALID', retryable: false });
      expect(error.detail).to.include('/api/platform/v1/link-tokens');
      expect(win.popups).to.have.length(1);
      expect(win.popups[0]!.popup.closed).to.be.true;
      expect(win.popups[0]!.popup.opened).to.equal('about:blank'); // it never went anywhere
      expect(await lifecycle(appUserId)).to.equal('UNLINKED');
    });

    it('is single use: a second connect() with the same token rejects with LINK_TOKEN_INVALID', async () => {
      const appUserId = `sdk-${randomUUID()}`;
      const linkToken = await mintLinkToken(world, appUserId);
      const params = {
        linkToken,
        appUserId,
        brandId: world.brands['public-v2']!,
        redirectUri: APP_RETURN,
        mode: 'redirect' as const,
      };
      const win = new FakeWindow();
      expect((await portico.connect({ ...params, window: win })).status).to.equal('redirected');
      const again = new FakeWindow();
      const error = await refusal(portico.connect({ ...params, window: again }));
      expect(error).to.include({ status: 400, code: 'LINK_TOKEN_INVALID' });
      expect(again.assigned).to.deep.equal([]);
    });

    it('minted for another app user rejects with LINK_TOKEN_MISMATCH naming the field', async () => {
      const win = new FakeWindow();
      const appUserId = `sdk-${randomUUID()}`;
      const error = await refusal(
        portico.connect({
          linkToken: await mintLinkToken(world, `sdk-someone-else-${randomUUID()}`),
          appUserId,
          brandId: world.brands['public-v2']!,
          redirectUri: APP_RETURN,
          mode: 'popup',
          window: win,
        }),
      );
      expect(error).to.include({ status: 400, code: 'LINK_TOKEN_MISMATCH' });
      expect(error.details.mismatched).to.deep.equal(['appUserId']);
      expect(win.popups[0]!.popup.closed).to.be.true;
      expect(await lifecycle(appUserId)).to.equal('UNLINKED');
    });

    it('left out (plain JavaScript, no types to stop it) rejects with the API’s 400 naming linkToken', async () => {
      const win = new FakeWindow();
      const withoutToken = {
        appUserId: `sdk-${randomUUID()}`,
        brandId: world.brands['public-v2']!,
        redirectUri: APP_RETURN,
        mode: 'popup',
        window: win,
      } as unknown as Parameters<Portico['connect']>[0] & { mode: 'popup' };
      const error = await refusal(portico.connect(withoutToken));
      expect(error).to.include({ status: 400, code: 'BAD_REQUEST' });
      expect(JSON.stringify(error.details)).to.include('linkToken');
      expect(win.popups[0]!.popup.closed).to.be.true;
    });
  });
});

describe('sdk/js: readConnectOutcome', () => {
  it('reads a connected return, keeping to the parameters Portico adds', () => {
    expect(
      readConnectOutcome('https://app.example.com/cb?from=portico&session=s-1&status=connected&connectionId=c-1'),
    ).to.deep.equal({ status: 'connected', sessionId: 's-1', connectionId: 'c-1' });
    expect(
      readConnectOutcome(new URL('https://app.example.com/cb?session=s-2&status=failed&error=session_used')),
    ).to.deep.equal({
      status: 'failed',
      sessionId: 's-2',
      error: 'session_used',
    });
  });

  it('is null for a URL that is no return from Portico, and failed when a return lacks its outcome', () => {
    expect(readConnectOutcome('https://app.example.com/cb?status=connected')).to.be.null;
    expect(readConnectOutcome('not a url')).to.be.null;
    expect(readConnectOutcome('https://app.example.com/cb?session=s-3&status=connected')).to.deep.equal({
      status: 'failed',
      sessionId: 's-3',
      error: 'unknown_error',
    });
  });

  it('reads the current page’s URL by default', () => {
    const global = globalThis as { window?: unknown };
    global.window = {
      location: { href: 'https://app.example.com/cb?session=s-4&status=failed&error=brand_unavailable' },
    };
    try {
      expect(readConnectOutcome()).to.deep.equal({ status: 'failed', sessionId: 's-4', error: 'brand_unavailable' });
    } finally {
      delete global.window;
    }
  });
});
