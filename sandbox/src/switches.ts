// Failure switches: a test flips one to make the sandbox misbehave the way a real EHR sometimes does (rate limits,
// outages, lost sessions, odd token responses), then checks how Portico copes. A plain mutable object, so
// `ehr.switches.denyAll = true` is all a test writes.
export type FailTarget = 'fhir' | 'token' | 'smart-configuration';
export type FailStatus = 401 | 429 | 500 | 503;
export type SmartConfigurationMode = 'ok' | 'no-s256' | 'not-json' | 'error-500' | 'hang';
/** RFC 9207's `iss` on authorization responses: the brand's issuer, another issuer, or none. */
export type AuthorizationResponseIss = 'right' | 'wrong' | 'absent';

export interface TokenResponseSwitch {
  omit?: ('access_token' | 'patient' | 'refresh_token')[];
  tokenType?: string;
}

export interface ObservationPadding {
  /** The least length of each padded observation's JSON (JSON.stringify of the resource). */
  bytes: number;
  /** Pads every k-th observation (by index, 1-based) only; every one when absent. */
  every?: number;
}

export interface PlannedFailure {
  status: FailStatus;
  retryAfterSeconds?: number;
}

export class SandboxSwitches {
  /** Every "Allow" on the sign-in page becomes a "Deny". */
  denyAll = false;
  /** Whole records (fhir/records.ts): searches of these types answer this status (as an EHR refuses one type). */
  refuseTypes: Record<string, number> = {};
  /** Whole records: searches of these types need a `category` (400 without one), as Epic's Observation search does. */
  categoryRequired: string[] = [];
  /** Whole records: attachments' `Binary/<id>` URLs served absolute (on this server's base, default) or relative. */
  attachmentUrls: 'absolute' | 'relative' = 'absolute';
  /** Whole records: these resources (`Type/id`) are served broken (a `status` that is a number), as invalid FHIR. */
  invalidResources: string[] = [];
  /** false: a refresh answers with the same refresh token instead of a new one. */
  rotateRefreshTokens = true;
  /** Rewrites the origin of search `next` links, to test that Portico follows only its FHIR server's own. */
  foreignNextOrigin: string | null = null;
  /** Every k-th observation (by index, 1-based) is served without `code`. */
  invalidEvery: number | null = null;
  /** Every k-th observation (by index, 1-based) names another patient, `Patient/someone-else`, as its subject. */
  foreignPatientEvery: number | null = null;
  /** Pads observations with a long `note` (a valid Annotation), to test large records and pages. */
  padObservations: ObservationPadding | null = null;
  /**
   * Added to the meta.lastUpdated that observations show, not to the one searches filter and order by: a positive
   * offset serves resources dated in the future.
   */
  lastUpdatedOffsetMs = 0;
  /** false: search Bundles carry no meta.lastUpdated, the server's clock a client may take a high-water mark from. */
  bundleLastUpdated = true;
  tokenResponse: TokenResponseSwitch | null = null;
  /** A refresh_token grant's response names this patient instead of the grant's; its tokens still read the grant's. */
  refreshPatient: string | null = null;
  smartConfiguration: SmartConfigurationMode = 'ok';
  /**
   * What `iss` every redirect back from the authorization endpoint carries (code or error): 'right' is the
   * `issuer` of the brand's smart-configuration, 'wrong' another issuer on the same origin (of a brand that does
   * not exist), 'absent' none, as an EHR without RFC 9207 sends.
   */
  iss: AuthorizationResponseIss = 'right';
  /** false: smart-configuration omits `authorization_response_iss_parameter_supported` (true otherwise). */
  advertiseIss = true;
  /**
   * By brand key: the host name that discovery (smart-configuration and the CapabilityStatement's oauth-uris)
   * gives the issuer and the authorization, token and revocation endpoints instead of the sandbox's own, with the
   * same scheme and port, e.g. 'localhost' for '127.0.0.1'. The `iss` parameter follows. The sandbox still
   * listens only where it listens.
   */
  endpointHostnames: Record<string, string> = {};

  private readonly planned = new Map<FailTarget, PlannedFailure[]>();
  private readonly holds = new Set<Promise<void>>();
  private readonly expiryListeners: (() => void)[] = [];
  private releaseClosed!: () => void;
  /** Settles when the sandbox closes: what held and hanging requests wait for besides their own release. */
  readonly closed = new Promise<void>((resolve) => (this.releaseClosed = resolve));

  /** The next `times` requests to `target` answer `status` (with Retry-After when given). */
  failNext(target: FailTarget, status: FailStatus, times = 1, retryAfterSeconds?: number): void {
    const queue = this.planned.get(target) ?? [];
    for (let i = 0; i < times; i++)
      queue.push(retryAfterSeconds === undefined ? { status } : { status, retryAfterSeconds });
    this.planned.set(target, queue);
  }

  /** Every access token issued so far is expired from now on. */
  expireAccessTokens(): void {
    for (const listener of this.expiryListeners) listener();
  }

  /** refresh_token grants wait until the returned function is called (or the sandbox closes). */
  holdRefresh(): () => void {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    this.holds.add(hold);
    return () => {
      this.holds.delete(hold);
      release();
    };
  }

  /** @internal The failure planned for this request to `target`, consumed. */
  takeFailure(target: FailTarget): PlannedFailure | undefined {
    return this.planned.get(target)?.shift();
  }

  /** @internal Resolves once no hold is in place (re-checked, so a hold added while waiting counts too). */
  async refreshGate(): Promise<void> {
    while (this.holds.size > 0) {
      const settled = await Promise.race([
        Promise.all([...this.holds]).then(() => 'released'),
        this.closed.then(() => 'closed'),
      ]);
      if (settled === 'closed') return;
    }
  }

  /** @internal */
  onExpireAccessTokens(listener: () => void): void {
    this.expiryListeners.push(listener);
  }

  /** @internal */
  close(): void {
    this.releaseClosed();
  }
}
