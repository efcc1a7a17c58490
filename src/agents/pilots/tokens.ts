/**
 * Pilot tokens (docs/pilots.md): `dirigo-pilot.<PilotID>.<expiry, Unix seconds>.<MAC>`, an HMAC-SHA-256
 * (RFC 2104) under a key every instance shares (`pilot_keys`), so that any instance checks one without a
 * row per token. A token is honoured only while its pilot's row says it is alive: not in a final state
 * and not revoked (one primary-key read per request).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../../kernel/db/database.ts';
import { InvalidToken } from '../../kernel/errors.ts';
import { isFinalPilotState } from './states.ts';
import { pilotById, type PilotRow } from './store.ts';

const PREFIX = 'dirigo-pilot';
const KEY_NAME = 'pilot-token-key';
/** What every pilot token starts with: how the agents' guard tells one from an access token (a JWT). */
export const PILOT_TOKEN_PREFIX = `${PREFIX}.`;

/** PilotIDs are int32 keys. */
const MAX_PILOT_ID = 2 ** 31 - 1;

export interface PilotTokenClaims {
  pilotId: number;
  /** Expiry, Unix seconds. */
  exp: number;
}

export class PilotTokens {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    this.#key = key;
  }

  /** The key from the database, made by whichever instance needs it first. */
  static async load(db: Db): Promise<PilotTokens> {
    await db
      .insertInto('pilot_keys')
      .values({ name: KEY_NAME, value: randomBytes(32).toString('base64') })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const row = await db.selectFrom('pilot_keys').select('value').where('name', '=', KEY_NAME).executeTakeFirstOrThrow();
    return new PilotTokens(Buffer.from(row.value, 'base64'));
  }

  #mac(pilotId: number, exp: number): Buffer {
    return createHmac('sha256', this.#key).update(`${PREFIX}.${pilotId}.${exp}`).digest();
  }

  /** @example tokens.sign(7, 1795000000) // 'dirigo-pilot.7.1795000000.<43 characters>' */
  sign(pilotId: number, exp: number): string {
    return `${PREFIX}.${pilotId}.${exp}.${this.#mac(pilotId, exp).toString('base64url')}`;
  }

  /**
   * The pilot and expiry a token names, when its MAC is right; expiry is not checked here. One token has one
   * spelling: numbers without leading zeros, and the MAC compared (in constant time) as the string this
   * service writes, so that the unused bits of its last base64url character (RFC 4648 §5) cannot vary.
   */
  verify(token: string): PilotTokenClaims | undefined {
    const m = /^dirigo-pilot\.([1-9]\d{0,9})\.([1-9]\d{0,11})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!m) return undefined;
    const pilotId = Number(m[1]);
    const exp = Number(m[2]);
    if (pilotId > MAX_PILOT_ID) return undefined;
    const given = Buffer.from(m[3]!, 'ascii');
    const expected = Buffer.from(this.#mac(pilotId, exp).toString('base64url'), 'ascii');
    return given.length === expected.length && timingSafeEqual(given, expected) ? { pilotId, exp } : undefined;
  }
}

const loaded = new WeakMap<Db, Promise<PilotTokens>>();

/** The pilot tokens of this database, loaded once per process. */
export function pilotTokens(db: Db): Promise<PilotTokens> {
  let tokens = loaded.get(db);
  if (!tokens) {
    tokens = PilotTokens.load(db);
    tokens.catch(() => loaded.delete(db));
    loaded.set(db, tokens);
  }
  return tokens;
}

/** A new token for `pilotId` lasting `lifetimeMs`, with its lifetime in seconds (RFC 6749 §5.1 `expires_in`). */
export async function issuePilotToken(db: Db, pilotId: number, lifetimeMs: number): Promise<{ token: string; expiresIn: number }> {
  const expiresIn = Math.max(1, Math.floor(lifetimeMs / 1000));
  const exp = Math.floor(Date.now() / 1000) + expiresIn;
  return { token: (await pilotTokens(db)).sign(pilotId, exp), expiresIn };
}

/**
 * Why the pilot may no longer act (revoked, ended), or undefined while it may: what a 401 names.
 */
export function pilotRefusal(pilot: PilotRow): string | undefined {
  if (pilot.revoked_by !== null) return `pilot ${pilot.pilot_id} was revoked by ${pilot.revoked_by}${pilot.reason ? `: ${pilot.reason}` : ''}`;
  if (isFinalPilotState(pilot.state)) return `pilot ${pilot.pilot_id} has ended (${pilot.state}${pilot.reason ? `: ${pilot.reason}` : ''})`;
  return undefined;
}

/**
 * The live pilot a pilot token speaks for. @throws InvalidToken (RFC 6750 §3.1) naming why: a bad MAC,
 * an expired token, an unknown, ended or revoked pilot.
 */
export async function verifyPilotToken(db: Db, token: string): Promise<PilotRow> {
  const claims = (await pilotTokens(db)).verify(token);
  if (!claims) throw new InvalidToken('the pilot token is not valid (malformed, or not signed by this service)');
  if (claims.exp <= Date.now() / 1000) throw new InvalidToken(`the pilot token of pilot ${claims.pilotId} has expired`);
  const pilot = await pilotById(db, claims.pilotId);
  if (!pilot) throw new InvalidToken(`pilot ${claims.pilotId} does not exist`);
  const refused = pilotRefusal(pilot);
  if (refused) throw new InvalidToken(refused);
  return pilot;
}
