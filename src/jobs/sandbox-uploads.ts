/**
 * Sandboxes sent straight to the store (docs/sandboxes.md "Direct transfers"): announced by sha256 and
 * size (POST /sandboxes), uploaded to a presigned URL, then referred to by submissions (InputSandboxRef)
 * and by agents (their output sandbox). Nothing is used by a job before its bytes are known to hash to
 * its name: the store's own checksum, or the service hashing the object once.
 */
import { createHash } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { Principal } from '../auth/index.ts';
import type { Db } from '../kernel/db/database.ts';
import { InvalidRequest, PayloadTooLarge, SandboxQuotaExceeded } from '../kernel/errors.ts';
import type { ServiceSandboxStore } from '../payload/sandbox-store.ts';
import type { JobsConfig } from './config-schema.ts';
import { forgetSandbox, groupSandbox, liveBytes, markVerified, registerSandbox } from './sandbox-registry.ts';

/** The answer to POST /sandboxes. */
export type Announced =
  | { sha256: string; size: number; exists: true }
  | { sha256: string; size: number; exists: false; upload: { url: string; method: 'PUT'; headers: Record<string, string> }; expiresAt: string };

/** Who a sandbox is registered for: the caller, or a job's owner (its output sandbox). */
export interface SandboxOwner {
  username: string;
  group: string;
}

export class SandboxUploads {
  readonly #db: Db;
  readonly #config: JobsConfig;
  readonly #store: ServiceSandboxStore;

  constructor(db: Db, config: JobsConfig, store: ServiceSandboxStore) {
    this.#db = db;
    this.#config = config;
    this.#store = store;
  }

  /** POST /sandboxes: exists for the owner's group, or a pending row and a presigned upload. @throws PayloadTooLarge, SandboxQuotaExceeded */
  async announce(owner: SandboxOwner, sha256: string, size: number, quota = true): Promise<Announced> {
    const max = this.#config.sandbox.maxSandboxSize;
    if (size > max) throw new PayloadTooLarge(`the sandbox of ${size} bytes`, { bytes: max, setting: 'jobs.sandbox.maxSandboxSize' });
    const row = await groupSandbox(this.#db, sha256, owner.group);
    if (row?.verified_at) {
      if (row.size !== size) throw new InvalidRequest(`sandbox sha256:${sha256} is ${row.size} bytes, not ${size}`);
      if ((await this.#store.stat(sha256)) !== undefined) return { sha256, size, exists: true };
      // Its object went meanwhile (removed, or never in this store): every row of it is stale.
      await forgetSandbox(this.#db, sha256);
    }
    if (quota) await this.#checkQuota(owner, size, row && row.owner === owner.username ? row.size : 0);
    await registerSandbox(this.#db, { sha256, size, owner: owner.username, group: owner.group }, false);
    const put = await this.#store.presignPut(sha256, size);
    return { sha256, size, exists: false, upload: { url: put.url, method: put.method, headers: put.headers }, expiresAt: put.expiresAt.toISOString() };
  }

  async #checkQuota(owner: SandboxOwner, size: number, counted: number): Promise<void> {
    const quota = this.#config.sandbox.quotaBytes;
    if (!quota) return;
    const used = await liveBytes(this.#db, owner.username, this.#config.sandbox.unreferencedRetentionMs);
    if (used - counted + size > quota) {
      throw new SandboxQuotaExceeded(
        `the sandbox of ${size} bytes would take ${owner.username}'s live sandboxes to ${used - counted + size} bytes, over the quota of ${quota} bytes (jobs.sandbox.quotaBytes); ${used} bytes are used now: delete jobs or wait for unused uploads to expire`,
      );
    }
  }

  /**
   * The file store's presigned upload (PUT /sandboxes/{sha256}/content): the body goes to the store
   * hashed as it streams; bytes that are not `size` long or do not hash to `sha256` are refused (400) and
   * nothing is kept. The rows of that sandbox are then verified.
   */
  async receive(sha256: string, size: number, body: Readable): Promise<void> {
    const hash = createHash('sha256');
    let seen = 0;
    const check = new Transform({
      transform(chunk: Buffer, _enc, done) {
        seen += chunk.length;
        if (seen > size) return done(new InvalidRequest(`the upload is longer than the ${size} bytes the URL was signed for`));
        hash.update(chunk);
        done(null, chunk);
      },
      flush(done) {
        if (seen !== size) return done(new InvalidRequest(`the upload is ${seen} bytes; the URL was signed for ${size}`));
        const got = hash.digest('hex');
        // Failing here fails the store's write before its object is renamed into place.
        if (got !== sha256) return done(new InvalidRequest(`the uploaded bytes hash to sha256:${got}, not sha256:${sha256}`));
        done();
      },
    });
    body.on('error', (err) => check.destroy(err));
    await this.#store.put(body.pipe(check), { bytes: this.#config.sandbox.maxSandboxSize, setting: 'jobs.sandbox.maxSandboxSize' });
    await markVerified(this.#db, sha256, size);
  }

  /**
   * The verified sandbox `sha256` of `group`, for a job to point at. @throws InvalidRequest naming it when
   * the group has no row for it, when it was never uploaded, or when its bytes do not match (the object
   * and its rows are then removed)
   */
  async resolve(group: string, sha256: string, where: string): Promise<{ sha256: string; size: number }> {
    const row = await groupSandbox(this.#db, sha256, group);
    if (!row) throw new InvalidRequest(`${where}: sandbox sha256:${sha256} was not uploaded by you or your group (announce it with POST /sandboxes first)`);
    if (!(await this.verify(sha256, row.size, where, row.verified_at !== null))) {
      throw new InvalidRequest(`${where}: sandbox sha256:${sha256} was announced but its bytes were not uploaded (PUT them to the URL POST /sandboxes answered)`);
    }
    return { sha256, size: row.size };
  }

  /**
   * Whether the object `sha256` is in the store, `size` bytes that hash to its name: the store's own
   * checksum when it has one, else the service hashes it once. @returns false when it is not in the store
   * @throws InvalidRequest when its bytes do not match (it is removed, with its rows)
   */
  async verify(sha256: string, size: number, where: string, verified = false): Promise<boolean> {
    const stat = await this.#store.stat(sha256);
    if (!stat) return false;
    if (stat.size === size && (verified || stat.sha256Checked || (await this.#hashOf(sha256)) === sha256)) {
      if (!verified) await markVerified(this.#db, sha256, size);
      return true;
    }
    await this.#store.remove(sha256);
    await forgetSandbox(this.#db, sha256);
    throw new InvalidRequest(`${where}: the uploaded sandbox sha256:${sha256} does not hold what its name says (${stat.size} bytes, ${size} announced); it was removed: upload it again`);
  }

  async #hashOf(sha256: string): Promise<string> {
    const hash = createHash('sha256');
    for await (const chunk of await this.#store.get(sha256)) hash.update(chunk as Buffer);
    return hash.digest('hex');
  }

  /** Registers a sandbox the service stored itself (multipart submissions, uploads through the API): verified. */
  async stored(owner: SandboxOwner, stored: { sha256: string; size: number }): Promise<void> {
    await registerSandbox(this.#db, { sha256: stored.sha256, size: stored.size, owner: owner.username, group: owner.group }, true);
  }

  /** The presigned download of `sha256` named `fileName`, when the store presigns for clients (S3). */
  async presignedGet(sha256: string, fileName: string): Promise<{ url: string; expiresAt: string } | undefined> {
    if (this.#store.kind !== 's3') return undefined;
    const get = await this.#store.presignGet(sha256, fileName);
    return { url: get.url, expiresAt: get.expiresAt.toISOString() };
  }
}

/** The principal as a sandbox owner. */
export function ownerOf(principal: Principal): SandboxOwner {
  return { username: principal.username, group: principal.group };
}
