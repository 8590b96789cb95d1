// connect_sessions: one document per session (_id the session id). A session completes once: the
// completion is a conditional update on its status; the user's document (which records the session id
// on the connection it made) is the truth when the two disagree after a crash.
import type { Collection, Db } from 'mongodb';
import type { DocumentLocks } from '#core/infra/locks.js';
import { updateOneWhere } from '#core/infra/where.js';
import { markPlainWrite } from '../../shared/infra/change-scope.js';
import { through } from '#core/infra/mongo.js';

export interface ConnectSession {
  id: string;
  accountId: string;
  appId: string;
  appUserId: string;
  /** null until the patient chooses a brand in Portico Connect (the hosted picker). */
  brandId: string | null;
  /** The patient chose the brand in Portico Connect: the sign-in ends on its end page. */
  picked?: boolean;
  /**
   * COMPLETING: a complete has claimed it (until claimUntil) with the id its connection will have. With a
   * launch (docs/connecting.md): LAUNCHED once its authorizeUrl was visited, EXCHANGING while the callback
   * exchanges the code, COMPLETED, or FAILED (the reason in `failure`).
   */
  status: SessionStatus;
  createdAt: Date;
  expiresAt: Date;
  completedAt: Date | null;
  connectionId: string | null;
  claimUntil?: Date | null;
  /** Where the patient returns; null for sessions a backend completes. */
  redirectUri?: string | null;
  /** The connection in REAUTHORIZATION_REQUIRED this session reconnects (it keeps its id). */
  reconnect?: string | null;
  /** SHA-256 (base64url) of the authorizeUrl's secret; null without a launch. */
  launchHash?: string | null;
  /** Set by the launch: SHA-256 of `state`, the sealed PKCE verifier, the callback URL the EHR was given. */
  stateHash?: string | null;
  codeVerifier?: SealedValue | null;
  callbackUri?: string | null;
  /** SHA-256 of the secret the launching browser holds in its cookie (features/connections/launch/browser-binding.ts). */
  bindingHash?: string | null;
  /** The issuer the launch discovered, and whether it promised `iss` on its answers (RFC 9207). */
  issuer?: string | null;
  issRequired?: boolean;
  failure?: string | null;
}

export type SessionStatus = 'PENDING' | 'COMPLETING' | 'COMPLETED' | 'LAUNCHED' | 'EXCHANGING' | 'FAILED';

/** An encrypted value (features/connections/vault/keyring.ts), as stored. */
export interface SealedValue {
  /** 2: the additional data binds account, connection, field and FHIR base URL; absent: connection and field. */
  aad?: 2;
  kid: string;
  iv: string;
  ct: string;
  tag: string;
}

export interface SessionStore {
  insert(session: ConnectSession): Promise<void>;
  /** The account's session; null when absent or another account's. */
  get(accountId: string, id: string): Promise<ConnectSession | null>;
  /**
   * PENDING → COMPLETING for `connectionId` until `until`, or a lapsed claim (a complete that died part-way)
   * taken over with the connection id it chose; the session claimed, or null when someone else holds it.
   */
  claim(session: ConnectSession, connectionId: string, now: Date, until: Date): Promise<ConnectSession | null>;
  /** COMPLETING → COMPLETED, if the claim for `connectionId` still stands. */
  complete(id: string, connectionId: string, at: Date): Promise<boolean>;
  /** Any account's session (the launch and the callback are public and find it by its id). */
  find(id: string): Promise<ConnectSession | null>;
  /** Sets `changes` if the session is in one of `from`; the session after, or null when it is not. */
  move(id: string, from: SessionStatus[], changes: Partial<ConnectSession>): Promise<ConnectSession | null>;
}

type SessionDocument = Omit<ConnectSession, 'id'> & { _id: string; _changeId?: string };

export class SessionRepository implements SessionStore {
  private readonly collection: Collection<SessionDocument>;

  constructor(
    db: Db,
    private readonly locks: DocumentLocks,
  ) {
    this.collection = db.collection<SessionDocument>('connect_sessions');
  }

  /** `indexes`: the database handle index builds go through (they can take long). */
  async init(indexes?: Db): Promise<void> {
    await through(this.collection, indexes).createIndex({ accountId: 1, appUserId: 1 });
  }

  async insert(session: ConnectSession): Promise<void> {
    const { id, ...rest } = session;
    // Inside an idempotent request, the insert is its recovery point (shared/infra/change-scope.ts).
    await this.collection.insertOne({ _id: id, ...rest, ...(await markPlainWrite('connect_sessions', id)) });
  }

  async get(accountId: string, id: string): Promise<ConnectSession | null> {
    const session = await this.find(id);
    return session?.accountId === accountId ? session : null;
  }

  async find(id: string): Promise<ConnectSession | null> {
    const doc = await this.collection.findOne({ _id: id });
    if (!doc) return null;
    const { _id, _changeId, ...rest } = doc;
    return { id: _id, ...rest };
  }

  async move(id: string, from: SessionStatus[], changes: Partial<ConnectSession>): Promise<ConnectSession | null> {
    const { id: _id, ...set } = changes;
    const doc = await updateOneWhere(this.collection, this.locks, id, { status: { $in: from } }, { $set: set });
    if (!doc) return null;
    const { _id: docId, _changeId, ...rest } = doc;
    return { id: docId, ...rest };
  }

  async claim(session: ConnectSession, connectionId: string, now: Date, until: Date): Promise<ConnectSession | null> {
    const condition =
      session.status === 'PENDING'
        ? { status: 'PENDING' as const }
        : { status: 'COMPLETING' as const, connectionId: session.connectionId, claimUntil: { $lt: now } };
    const doc = await updateOneWhere(this.collection, this.locks, session.id, condition, {
      $set: { status: 'COMPLETING', connectionId, claimUntil: until },
    });
    if (!doc) return null;
    const { _id, _changeId, ...rest } = doc;
    return { id: _id, ...rest };
  }

  async complete(id: string, connectionId: string, at: Date): Promise<boolean> {
    return (
      (await updateOneWhere(
        this.collection,
        this.locks,
        id,
        { status: 'COMPLETING', connectionId },
        { $set: { status: 'COMPLETED', completedAt: at, claimUntil: null } },
      )) !== null
    );
  }
}
