/**
 * Job tokens: what a running job presents to report about itself (DIRAC's job wrapper reports with the
 * pilot's credentials; here each job gets its own, `DIRIGO_JOB_TOKEN`). A token names one job and one run
 * (its RescheduleCounter) and is a MAC under a key every instance shares, so that any instance can check it
 * without a row per token; it is honoured only while its job is Matched, Running or Completing.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../kernel/db/database.ts';

const PREFIX = 'dirigo-job';
const KEY_NAME = 'job-token-key';

export interface JobTokenClaims {
  jobId: number;
  run: number;
}

export class JobTokens {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    this.#key = key;
  }

  /** The key from the database, made by whichever instance needs it first. */
  static async load(db: Db): Promise<JobTokens> {
    await db
      .insertInto('jobs_secrets')
      .values({ name: KEY_NAME, value: randomBytes(32).toString('base64') })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const row = await db.selectFrom('jobs_secrets').select('value').where('name', '=', KEY_NAME).executeTakeFirstOrThrow();
    return new JobTokens(Buffer.from(row.value, 'base64'));
  }

  #mac(jobId: number, run: number): Buffer {
    return createHmac('sha256', this.#key).update(`${PREFIX}.${jobId}.${run}`).digest();
  }

  /** @example tokens.sign(42, 0) // 'dirigo-job.42.0.<43 characters>' */
  sign(jobId: number, run: number): string {
    return `${PREFIX}.${jobId}.${run}.${this.#mac(jobId, run).toString('base64url')}`;
  }

  /** The job and run a token names, when its MAC is right (compared in constant time). */
  verify(token: string): JobTokenClaims | undefined {
    const m = /^dirigo-job\.(\d{1,15})\.(\d{1,6})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!m) return undefined;
    const jobId = Number(m[1]);
    const run = Number(m[2]);
    const given = Buffer.from(m[3]!, 'base64url');
    return given.length === 32 && timingSafeEqual(given, this.#mac(jobId, run)) ? { jobId, run } : undefined;
  }
}

const loaded = new WeakMap<Db, Promise<JobTokens>>();

/** The job tokens of this database, loaded once per process. */
export function jobTokens(db: Db): Promise<JobTokens> {
  let tokens = loaded.get(db);
  if (!tokens) {
    tokens = JobTokens.load(db);
    tokens.catch(() => loaded.delete(db));
    loaded.set(db, tokens);
  }
  return tokens;
}
