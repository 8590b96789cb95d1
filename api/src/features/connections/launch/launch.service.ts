// A patient's sign-in at their health system (docs/connecting.md): SMART App Launch 2.2's standalone patient launch
// with PKCE, from the app's authorizeUrl to the callback. The session moves PENDING → LAUNCHED (the authorizeUrl,
// single use) → EXCHANGING (the callback's `state`, single use) → COMPLETED or FAILED, each step a conditional
// update, so a second visit or a replayed callback changes nothing. A connection exists only after a successful
// token exchange: its tokens are stored first (alone they grant nothing), then the connection is made exactly as
// `complete` makes one. Every way back to the app is a 303 to its redirectUri with `session`, `status` and either
// `connectionId` or `error`; what cannot go back (an unknown link or `state`) is a small page.
//
// Nobody can hijack a connection (docs/connecting.md, "Connections nobody can hijack"): the session was started with
// a link token the app's backend minted; the callback belongs to the browser that visited authorizeUrl (a cookie,
// browser-binding.ts); an authorization server that sends `iss` must send the one the launch discovered (RFC 9207),
// so a code from another health system is never redeemed here; endpoints must be where the registration pins them
// (registrations.ts); and every token response must name the connection's own patient.
import { randomBytes } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import type { Clock } from '#core/clock.js';
import { assertPublicHost } from '#core/net/address-policy.js';
import type { AppStore } from '../../apps/index.js';
import { RECORD_TYPES } from '../../clinical/index.js';
import {
  digest,
  type ConnectSession,
  type SealedValue,
  type ServedBrands,
  type SessionStore,
} from '../../connect-sessions/index.js';
import { UUID } from '../../../shared/http/ids.js';
import { matchesDigest } from '../../../shared/http/secrets.js';
import {
  authorizationUrl,
  ehrErrorCode,
  OAuthFailure,
  pinnedEndpointProblem,
  type GrantedTokens,
  type Registrations,
  type SmartDiscovery,
  type SmartOAuthClient,
  type SmartServer,
} from '../../smart/index.js';
import type { Bindings } from './browser-binding.js';
import type { ConnectionService } from '../lifecycle.js';
import type { SyncSchedule } from '../sync/schedule.js';
import { connectSignedIn, type TokenKeeper } from './signed-in-connection.js';
import { INVALID_LINK, INVALID_STATE, OTHER_BROWSER, type LaunchOutcome } from './outcomes.js';
import { consentGiven, consentPage } from './consent.js';

export type { TokenKeeper };

/** What a visit of authorizeUrl carries besides its token: the query's choices, and the consent value held. */
export interface LaunchChoices {
  /** The picker's choice (`brand`), for a session without a brand. */
  brand?: string;
  /** The consent page's value the link carried (`consent`), and the one the browser's cookie holds. */
  consent?: string;
  held?: string;
  /** "Don't share" (`decline`). */
  decline?: boolean;
}

export const CALLBACK_PATH = '/api/sdk/v1/connect/callback';

/** Seals and opens values (vault/keyring.ts). */
export interface Sealer {
  seal(plaintext: string, context: string): SealedValue;
  open(sealed: SealedValue, context: string): string;
}

/**
 * How long an initiate waits for discovery to tell whether a brand's endpoints are where its registration pins them
 * (cached for an hour after); past it the initiate goes on and the launch decides.
 */
export const INITIATE_DISCOVERY_MS = 3_000;

export interface LaunchServiceDeps {
  sessions: SessionStore;
  connections: Pick<ConnectionService, 'connect' | 'connectionOf' | 'reauthorized' | 'requireReauthorization'>;
  apps: AppStore;
  /** The served catalog. */
  brands: ServedBrands;
  registrations: Registrations;
  discovery: SmartDiscovery;
  oauth: SmartOAuthClient;
  vault: TokenKeeper;
  keyring: Sealer;
  /** PORTICO_SMART_ALLOW_INSECURE: http and loopback brands are connectable too. */
  allowInsecure: boolean;
  /** Whether tokens can be sealed for every replica (token keys given, or the development key): else nothing connects. */
  sealing: boolean;
  /** The connection's sync: scheduled before its tokens are stored, due at once when it is made (sync/schedule.ts). */
  syncs: Pick<SyncSchedule, 'connecting' | 'connected'>;
  clock: Clock;
}

/** A session that ended keeps none of its sign-in's secrets. */
const SPENT = { stateHash: null, codeVerifier: null, bindingHash: null } as const;

export class LaunchService {
  constructor(private readonly deps: LaunchServiceDeps) {}

  /** Whether any brand can be connected (registrations, and a key to seal tokens): else the picker is pointless. */
  anyConnectable(): boolean {
    return this.deps.sealing && !this.deps.registrations.isEmpty();
  }

  /**
   * Whether a patient can be led to the brand's sign-in: a client registration, a URL the policy admits, and, for
   * a registration that pins hosts, endpoints on them. Discovery gets a short while here; when it cannot answer
   * in time the brand counts as connectable and the launch decides.
   */
  async connectable(brandId: string): Promise<boolean> {
    if (!this.registered(brandId)) return false;
    const brand = this.deps.brands.brand(brandId)!;
    const registration = this.deps.registrations.for(brand)!;
    let server: SmartServer;
    try {
      server = await this.deps.discovery.discover(brand.fhirBaseUrl, INITIATE_DISCOVERY_MS);
    } catch {
      return true;
    }
    return pinnedEndpointProblem(registration, server) === undefined;
  }

  /** What can be known of a brand without asking its health system: a registration, a key to seal, an admitted URL. */
  private registered(brandId: string): boolean {
    const brand = this.deps.brands.brand(brandId);
    const registration = brand && this.deps.registrations.for(brand);
    return this.deps.sealing && !!brand && !!registration && this.admits(brand.fhirBaseUrl);
  }

  private admits(fhirBaseUrl: string): boolean {
    const url = new URL(fhirBaseUrl);
    if (this.deps.allowInsecure) return true;
    try {
      assertPublicHost(url.hostname);
      return url.protocol === 'https:';
    } catch {
      return false;
    }
  }

  /**
   * The authorizeUrl visited: on to the health system's sign-in, once. A session without a brand first shows
   * Portico Connect's picker (as often as it is visited), whose choice comes back as `brand`. Once the brand is
   * known, the consent page, until the patient's answer comes back with the value the page gave the browser: "Don't
   * share" fails the session (`access_denied`) without a word to the health system; Continue goes on to it.
   */
  async launch(token: string, origin: string, choices: LaunchChoices = {}): Promise<LaunchOutcome> {
    const found = await this.byToken(token, (s) => s.launchHash);
    if (!found) return INVALID_LINK;
    if (found.status !== 'PENDING') return this.back(found, { status: 'failed', error: 'session_used' });
    if (this.deps.clock.now() >= found.expiresAt)
      return this.back(found, { status: 'failed', error: 'session_expired' });
    // A suspended app leads no patient anywhere (its sessions cannot complete either).
    const app = await this.deps.apps.find(found.appId);
    if (app?.status !== 'ACTIVE') return this.fail(found, ['PENDING'], 'app_suspended');
    let session = found;
    const chosen = choices.brand;
    if (session.brandId === null) {
      if (chosen === undefined || !this.deps.brands.brand(chosen)) return { kind: 'picker', appName: app.name };
      // Nothing is asked of the health system before the patient's answer to the consent page: where its endpoints
      // are is checked after Continue (below).
      if (!this.registered(chosen)) return this.notConnectable(app.name, this.deps.brands.brand(chosen)!.name);
      session = { ...session, brandId: chosen, picked: true };
    }
    const pickedNow = found.brandId === null;
    const brand = this.deps.brands.brand(session.brandId!);
    const registration = brand && this.deps.registrations.for(brand);
    if (!brand || !registration) return this.fail(session, ['PENDING'], 'brand_unavailable');
    if (!consentGiven(choices.consent, choices.held)) return consentPage(app, brand, session.expiresAt);
    if (choices.decline) return this.fail(session, ['PENDING'], 'access_denied');
    let server;
    try {
      server = await this.deps.discovery.discover(brand.fhirBaseUrl);
    } catch {
      // Chosen in the picker just now: the patient may choose again (the session is not spent).
      if (pickedNow)
        return {
          kind: 'picker',
          appName: app.name,
          notice: `${brand.name} is not answering right now. Try again in a moment, or choose another.`,
        };
      return this.fail(session, ['PENDING'], 'brand_unavailable');
    }
    if (pinnedEndpointProblem(registration, server) !== undefined)
      return pickedNow
        ? this.notConnectable(app.name, brand.name)
        : this.fail(session, ['PENDING'], 'brand_unavailable');
    const state = `${session.id}.${randomBytes(32).toString('base64url')}`;
    const binding = randomBytes(32).toString('base64url');
    const verifier = oauth.generateRandomCodeVerifier();
    const callbackUri = origin + CALLBACK_PATH;
    const launched = await this.deps.sessions.move(session.id, ['PENDING'], {
      status: 'LAUNCHED',
      brandId: session.brandId,
      picked: session.picked === true,
      stateHash: digest(state),
      bindingHash: digest(binding),
      codeVerifier: this.deps.keyring.seal(verifier, `${session.id}/verifier`),
      callbackUri,
      // What the callback holds the answer's `iss` to: this server's, as discovered now.
      issuer: server.issuer,
      issRequired: server.issParameter,
    });
    if (!launched) return this.back(session, { status: 'failed', error: 'session_used' });
    const location = authorizationUrl(server, registration, {
      redirectUri: callbackUri,
      state,
      codeChallenge: await oauth.calculatePKCECodeChallenge(verifier),
      recordTypes: RECORD_TYPES,
    });
    return {
      kind: 'redirect',
      status: 302,
      location: location.href,
      bind: { sessionId: session.id, secret: binding, expiresAt: session.expiresAt },
    };
  }

  /** The picker again, saying the brand chosen cannot be connected. */
  private notConnectable(appName: string, brandName: string): LaunchOutcome {
    return {
      kind: 'picker',
      appName,
      notice: `${brandName} cannot be connected through Portico yet. Choose another health system, or go back to ${appName}.`,
    };
  }

  /**
   * The health system's answer: the code exchanged, the connection made, the patient back at the app. `bindings`:
   * the sign-ins this browser started (its cookie).
   */
  async callback(
    query: { state?: string; code?: string; error?: string; iss?: string },
    bindings: Bindings,
  ): Promise<LaunchOutcome> {
    const outcome = await this.answer(query, bindings);
    // Back at the app, the sign-in is over: its binding can leave the browser.
    const id = query.state?.slice(0, 36);
    return outcome.kind === 'redirect' || outcome.kind === 'end' ? { ...outcome, ...(id && { unbind: id }) } : outcome;
  }

  private async answer(
    query: { state?: string; code?: string; error?: string; iss?: string },
    bindings: Bindings,
  ): Promise<LaunchOutcome> {
    const session = query.state === undefined ? null : await this.byToken(query.state, (s) => s.stateHash, true);
    if (!session || session.status !== 'LAUNCHED' || this.deps.clock.now() >= session.expiresAt) return INVALID_STATE;
    // Another browser (a copied authorization link) changes nothing: the session stays for its own browser.
    if (!matchesDigest(bindings.get(session.id), session.bindingHash)) return OTHER_BROWSER;
    // RFC 9207: before anything else of the answer is believed, it must come from the server the launch sent the
    // patient to (a server that promised `iss` must send it; one that did not is still held to it when it does).
    if ((session.issRequired || query.iss !== undefined) && query.iss !== session.issuer)
      return this.fail(session, ['LAUNCHED'], 'issuer_mismatch');
    if (query.error !== undefined || query.code === undefined)
      return this.fail(session, ['LAUNCHED'], ehrErrorCode(query.error));
    const exchanging = await this.deps.sessions.move(session.id, ['LAUNCHED'], { status: 'EXCHANGING' });
    if (!exchanging) return INVALID_STATE;
    const app = await this.deps.apps.find(session.appId);
    if (app?.status !== 'ACTIVE') return this.fail(session, ['EXCHANGING'], 'app_suspended');
    const brand = this.deps.brands.brand(session.brandId!);
    const registration = brand && this.deps.registrations.for(brand);
    if (!brand || !registration) return this.fail(session, ['EXCHANGING'], 'brand_unavailable');
    let tokens: GrantedTokens;
    try {
      const server = await this.deps.discovery.discover(brand.fhirBaseUrl);
      tokens = await this.deps.oauth.exchangeCode(server, registration, {
        code: query.code,
        redirectUri: session.callbackUri!,
        codeVerifier: this.deps.keyring.open(session.codeVerifier!, `${session.id}/verifier`),
      });
    } catch (error) {
      // An answer refused for its content (no patient, not Bearer) still granted tokens: they are revoked.
      if (error instanceof OAuthFailure && error.granted) this.deps.vault.discard(brand, error.granted);
      return this.fail(session, ['EXCHANGING'], error instanceof OAuthFailure ? error.error : 'brand_unavailable');
    }
    const connectionId = await connectSignedIn(this.deps, session, brand, tokens);
    if (typeof connectionId !== 'string') return this.fail(session, ['EXCHANGING'], connectionId.error);
    // (From here on the tokens are the connection's: stored, and deleted with it.)
    await this.deps.sessions.move(session.id, ['EXCHANGING'], {
      status: 'COMPLETED',
      completedAt: this.deps.clock.now(),
      connectionId,
      ...SPENT,
    });
    this.deps.syncs.connected({
      accountId: session.accountId,
      appUserId: session.appUserId,
      connectionId,
      brandId: session.brandId!,
    });
    return this.back(session, { status: 'connected', connectionId });
  }

  private async fail(session: ConnectSession, from: ConnectSession['status'][], error: string): Promise<LaunchOutcome> {
    const moved = await this.deps.sessions.move(session.id, from, { status: 'FAILED', failure: error, ...SPENT });
    return moved ? this.back(session, { status: 'failed', error }) : INVALID_STATE;
  }

  /** Back to the app: a 303, or Portico Connect's end page when the patient chose the brand there. */
  private back(
    session: ConnectSession,
    outcome: { status: 'connected' | 'failed'; connectionId?: string; error?: string },
  ): LaunchOutcome {
    const url = new URL(session.redirectUri!);
    url.searchParams.set('session', session.id);
    for (const [name, value] of Object.entries(outcome)) if (value !== undefined) url.searchParams.set(name, value);
    if (!session.picked) return { kind: 'redirect', status: 303, location: url.href };
    const brandName = session.brandId ? this.deps.brands.brand(session.brandId)?.name : undefined;
    return {
      kind: 'end',
      location: url.href,
      connected: outcome.status === 'connected',
      brandName,
      error: outcome.error,
    };
  }

  /** The session a `<id>.<secret>` token names, if the secret is the one whose hash `hashOf` gives. */
  private async byToken(
    token: string,
    hashOf: (s: ConnectSession) => string | null | undefined,
    whole = false,
  ): Promise<ConnectSession | null> {
    const dot = token.indexOf('.');
    const id = token.slice(0, dot);
    if (dot < 0 || token.length > 200 || !UUID.test(id)) return null;
    const session = await this.deps.sessions.find(id);
    const expected = session && hashOf(session);
    if (!session?.redirectUri || !expected) return null;
    return matchesDigest(whole ? token : token.slice(dot + 1), expected) ? session : null;
  }
}
