// What a patient's browser is answered at each stop of a sign-in (launch.service.ts): a redirect, a page of
// Portico's own, or one of Portico Connect's (connect-pages.ts); sdk.routes.ts renders them.

/** Where the browser goes: back to the app, on to the health system, or a page of Portico's own. */
export type LaunchOutcome =
  | {
      kind: 'redirect';
      status: 302 | 303;
      location: string;
      /** On to the health system: the browser now holds this sign-in's binding (browser-binding.ts). */
      bind?: { sessionId: string; secret: string; expiresAt: Date };
      /** The sign-in ended: its binding can go. */
      unbind?: string;
    }
  | { kind: 'page'; status: 400 | 404; title: string; message: string }
  /** Portico Connect's picker, with a notice when the brand chosen cannot be connected. */
  | { kind: 'picker'; appName: string; notice?: string }
  /**
   * Portico Connect's consent page: what the app asks to read, and the choice to continue or not, each link carrying
   * `value`, which the browser now holds too (consent.ts) until the session expires.
   */
  | {
      kind: 'consent';
      appName: string;
      brandId: string;
      brandName: string;
      /** Whether the catalog holds the brand's logo. */
      logo: boolean;
      /** The record types the app's install may read, in plain words. */
      categories: string[];
      value: string;
      expiresAt: Date;
    }
  /** Portico Connect's end page: the outcome, and on to the app at `location`. */
  | {
      kind: 'end';
      location: string;
      connected: boolean;
      brandName: string | undefined;
      error: string | undefined;
      unbind?: string;
    };

/** The link is unknown. */
export const INVALID_LINK: LaunchOutcome = {
  kind: 'page',
  status: 404,
  title: 'This link is not valid',
  message: 'The link to connect your health records is not valid. Go back to the app and start again.',
};
export const INVALID_STATE: LaunchOutcome = {
  kind: 'page',
  status: 400,
  title: 'This sign-in cannot be finished',
  message:
    'This answer from your health system is unknown, was already used, or came too late. Go back to the app and start again.',
};
export const OTHER_BROWSER: LaunchOutcome = {
  kind: 'page',
  status: 400,
  title: 'Finish in the browser you started in',
  message:
    'This sign-in was started in another browser, or this browser no longer remembers it. Nothing was connected. Go back to the app and start again from this browser.',
};
