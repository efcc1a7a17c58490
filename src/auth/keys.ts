/**
 * Token signing keys, kept in the database so that every instance signs and verifies with the same set.
 * The newest unretired key signs; a retired key stays published (JWKS) and accepted until the last token
 * it could have signed has expired. Instances reload the set periodically and on an unknown `kid`.
 */
import { createPrivateKey, randomUUID, type JsonWebKey, type KeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { PostgresAdapter, sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { nowIso } from '../db/database.ts';

/** Advisory lock id serialising the first key's creation across instances (any constant unique to Dirigo). */
const FIRST_KEY_LOCK = 0x44697269;

export type SigningAlgorithm = 'EdDSA' | 'ES256';

interface LoadedKey {
  kid: string;
  alg: SigningAlgorithm;
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicJwk: JWK;
  createdAt: string;
  retiredAt: string | null;
}

const RELOAD_INTERVAL_MS = 30_000;
const UNKNOWN_KID_RELOAD_MS = 1_000;

export class KeyStore {
  readonly #db: Db;
  readonly #algorithm: SigningAlgorithm;
  /** How long a retired key must stay published: the longest lifetime of a token it signed. */
  readonly #retentionMs: number;
  #keys: LoadedKey[] = [];
  #loadedAt = 0;
  #loading: Promise<void> | undefined;

  constructor(db: Db, algorithm: SigningAlgorithm, tokenLifetimeSeconds: number) {
    this.#db = db;
    this.#algorithm = algorithm;
    this.#retentionMs = tokenLifetimeSeconds * 1000;
  }

  /** Makes sure a signing key exists (first start) and loads the set. */
  async init(): Promise<void> {
    await this.reload();
    if (this.#keys.some((k) => k.retiredAt === null)) return;
    // Several instances starting together on a fresh database must agree on one first key: the check and
    // the insert run under a PostgreSQL advisory lock (SQLite has one instance, and serialises writers).
    await this.#db.transaction().execute(async (trx) => {
      if (trx.getExecutor().adapter instanceof PostgresAdapter) await sql`select pg_advisory_xact_lock(${FIRST_KEY_LOCK})`.execute(trx);
      const active = await trx.selectFrom('signing_keys').select('kid').where('retired_at', 'is', null).executeTakeFirst();
      if (!active) await this.#insertKey(trx);
    });
    await this.reload();
  }

  /** Creates a new signing key and retires the others; they stay published until their tokens expire. */
  async rotate(): Promise<string> {
    const kid = await this.#db.transaction().execute(async (trx) => {
      await trx.updateTable('signing_keys').set({ retired_at: nowIso() }).where('retired_at', 'is', null).execute();
      return this.#insertKey(trx);
    });
    await this.purge();
    await this.reload();
    return kid;
  }

  /** Deletes keys whose every token has expired. */
  async purge(): Promise<number> {
    const cutoff = new Date(Date.now() - this.#retentionMs).toISOString();
    const res = await this.#db.deleteFrom('signing_keys').where('retired_at', '<', cutoff).executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  async #insertKey(db: Db = this.#db): Promise<string> {
    const { privateKey, publicKey } = await generateKeyPair(this.#algorithm, { extractable: true });
    const kid = randomUUID();
    await db
      .insertInto('signing_keys')
      .values({
        kid,
        alg: this.#algorithm,
        private_jwk: JSON.stringify(await exportJWK(privateKey)),
        public_jwk: JSON.stringify({ ...(await exportJWK(publicKey)), kid, alg: this.#algorithm, use: 'sig' }),
        created_at: nowIso(),
        retired_at: null,
      })
      .execute();
    return kid;
  }

  async reload(): Promise<void> {
    this.#loading ??= this.#load().finally(() => (this.#loading = undefined));
    return this.#loading;
  }

  async #load(): Promise<void> {
    const rows = await this.#db.selectFrom('signing_keys').selectAll().orderBy('created_at', 'desc').execute();
    const keys: LoadedKey[] = [];
    for (const row of rows) {
      const existing = this.#keys.find((k) => k.kid === row.kid);
      if (existing) {
        keys.push({ ...existing, retiredAt: row.retired_at });
        continue;
      }
      const alg = row.alg as SigningAlgorithm;
      const publicJwk = JSON.parse(row.public_jwk) as JWK;
      keys.push({
        kid: row.kid,
        alg,
        // A node:crypto KeyObject: TokenService signs with node:crypto directly.
        privateKey: createPrivateKey({ key: JSON.parse(row.private_jwk) as JsonWebKey, format: 'jwk' }),
        publicKey: (await importJWK(publicJwk, alg)) as unknown as KeyObject,
        publicJwk,
        createdAt: row.created_at,
        retiredAt: row.retired_at,
      });
    }
    this.#keys = keys;
    this.#loadedAt = Date.now();
  }

  async #fresh(): Promise<void> {
    if (Date.now() - this.#loadedAt > RELOAD_INTERVAL_MS) await this.reload();
  }

  /** The key that signs new tokens. */
  async signingKey(): Promise<{ kid: string; alg: SigningAlgorithm; key: KeyObject }> {
    await this.#fresh();
    const active = this.#keys.find((k) => k.retiredAt === null) ?? this.#keys[0];
    if (!active) throw new Error('no signing key; the key store was not initialised');
    return { kid: active.kid, alg: active.alg, key: active.privateKey };
  }

  /** The public key for `kid`, reloading once when another instance may have rotated. */
  async verificationKey(kid: string): Promise<{ alg: SigningAlgorithm; key: KeyObject } | undefined> {
    await this.#fresh();
    let key = this.#keys.find((k) => k.kid === kid);
    if (!key && Date.now() - this.#loadedAt > UNKNOWN_KID_RELOAD_MS) {
      await this.reload();
      key = this.#keys.find((k) => k.kid === kid);
    }
    if (!key || !this.#published(key)) return undefined;
    return { alg: key.alg, key: key.publicKey };
  }

  #published(key: LoadedKey): boolean {
    return key.retiredAt === null || Date.parse(key.retiredAt) + this.#retentionMs > Date.now();
  }

  /** The JWKS document (RFC 7517 §5). */
  async jwks(): Promise<{ keys: JWK[] }> {
    await this.#fresh();
    return { keys: this.#keys.filter((k) => this.#published(k)).map((k) => k.publicJwk) };
  }
}
