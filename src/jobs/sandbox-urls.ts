/**
 * The file store's presigned URLs: URLs of the API itself, `/sandboxes/{sha256}/content?expires=<unix>&…
 * &signature=<hex>`, so that clients follow one path whatever the store (docs/sandboxes.md). The signature
 * is an HMAC-SHA256 under a key every instance shares (table jobs_secrets, made by whichever instance needs
 * it first) over the method, the sandbox, the expiry and, for an upload, its size, for a download, the file
 * name: a download URL cannot be used to upload, nor an upload URL for other bytes' size.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../kernel/db/database.ts';

const KEY_NAME = 'sandbox-url-key';
const SHA256 = /^[0-9a-f]{64}$/;

export interface SandboxUrlClaims {
  method: 'GET' | 'PUT';
  sha256: string;
  /** Unix time (seconds) after which the URL is refused. */
  expires: number;
  /** An upload's exact size in bytes. */
  size?: number | undefined;
  /** A download's file name (Content-Disposition). */
  name?: string | undefined;
}

/** Why a URL is refused, for the 403's message. */
export type SandboxUrlCheck = { ok: true; claims: SandboxUrlClaims } | { ok: false; problem: string };

export class SandboxUrlSigner {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    this.#key = key;
  }

  /** The key from the database, made by whichever instance needs it first. */
  static async load(db: Db): Promise<SandboxUrlSigner> {
    await db
      .insertInto('jobs_secrets')
      .values({ name: KEY_NAME, value: randomBytes(32).toString('base64') })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const row = await db.selectFrom('jobs_secrets').select('value').where('name', '=', KEY_NAME).executeTakeFirstOrThrow();
    return new SandboxUrlSigner(Buffer.from(row.value, 'base64'));
  }

  #mac(c: SandboxUrlClaims): Buffer {
    // Fields joined by newlines, which none of them may hold (the name is checked by sign and verify alike).
    return createHmac('sha256', this.#key).update(['dirigo-sandbox-url', c.method, c.sha256, c.expires, c.size ?? '', c.name ?? ''].join('\n')).digest();
  }

  /**
   * The path and query of a URL granting `claims` (the caller puts the public URL before it).
   * @example signer.sign({ method: 'GET', sha256, expires: 1700000000, name: 'job-1-input.tar.gz' })
   *   // '/sandboxes/<sha256>/content?expires=1700000000&name=job-1-input.tar.gz&signature=<64 hex>'
   */
  sign(claims: SandboxUrlClaims): string {
    if (!SHA256.test(claims.sha256)) throw new Error(`not a sha256: ${claims.sha256}`);
    if (claims.name !== undefined && /[\n\r]/.test(claims.name)) throw new Error('a file name with a line break');
    const query = new URLSearchParams({ expires: String(claims.expires) });
    if (claims.size !== undefined) query.set('size', String(claims.size));
    if (claims.name !== undefined) query.set('name', claims.name);
    query.set('signature', this.#mac(claims).toString('hex'));
    return `/sandboxes/${claims.sha256}/content?${query.toString()}`;
  }

  /**
   * Checks a request to `/sandboxes/{sha256}/content` with `method` and the query it came with: the MAC
   * (compared in constant time), then the expiry against `now` (ms).
   */
  verify(method: string, sha256: string, query: Record<string, unknown>, now = Date.now()): SandboxUrlCheck {
    if (method !== 'GET' && method !== 'PUT' && method !== 'HEAD') return { ok: false, problem: `${method} is not allowed with a sandbox URL` };
    const expires = Number(query.expires);
    const signature = typeof query.signature === 'string' ? query.signature : '';
    const size = query.size === undefined ? undefined : Number(query.size);
    const name = typeof query.name === 'string' ? query.name : undefined;
    if (!SHA256.test(sha256) || !Number.isSafeInteger(expires) || !/^[0-9a-f]{64}$/.test(signature) || (size !== undefined && !(Number.isSafeInteger(size) && size >= 0))) {
      return { ok: false, problem: 'the sandbox URL is not valid (expires, signature)' };
    }
    // HEAD is a GET without the body: the URL a download was given serves both.
    const claims: SandboxUrlClaims = { method: method === 'HEAD' ? 'GET' : method, sha256, expires, size, name };
    if (name !== undefined && /[\n\r]/.test(name)) return { ok: false, problem: 'the sandbox URL is not valid (name)' };
    if (!timingSafeEqual(Buffer.from(signature, 'hex'), this.#mac(claims))) return { ok: false, problem: 'the sandbox URL\'s signature is not valid' };
    if (now > expires * 1000) return { ok: false, problem: `the sandbox URL expired at ${new Date(expires * 1000).toISOString()}` };
    return { ok: true, claims };
  }
}

const loaded = new WeakMap<Db, Promise<SandboxUrlSigner>>();

/** The signer of this database, loaded once per process. */
export function sandboxUrlSigner(db: Db): Promise<SandboxUrlSigner> {
  let signer = loaded.get(db);
  if (!signer) {
    signer = SandboxUrlSigner.load(db);
    signer.catch(() => loaded.delete(db));
    loaded.set(db, signer);
  }
  return signer;
}
