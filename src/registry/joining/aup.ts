/**
 * The acceptable-use policy (docs/registry.md "AUP"): its versions (the newest row is current) and who
 * accepted which, audited. Checks read the snapshot (`Registry.aupPending`), so every write refreshes it.
 */
import type { Db } from '../../kernel/db/database.ts';
import { Conflict, InvalidRequest } from '../../kernel/errors.ts';
import { writeAudit } from '../audit.ts';
import type { Registry } from '../registry.ts';

export interface AupInput {
  version: string;
  text: string;
  validDays?: number | undefined;
}

const VERSION = /^[A-Za-z0-9_.-]{1,64}$/;

export class AupAdmin {
  readonly #db: Db;
  readonly #registry: Registry;
  readonly #now: () => Date;

  constructor(db: Db, registry: Registry, now: () => Date = () => new Date()) {
    this.#db = db;
    this.#registry = registry;
    this.#now = now;
  }

  /** A new current version; an existing version is never rewritten (acceptances name it). */
  async set(actor: string, input: AupInput): Promise<void> {
    if (!VERSION.test(input.version)) throw new InvalidRequest(`version '${input.version}' must be 1-64 of A-Z a-z 0-9 _ . -`);
    if (input.text.trim() === '') throw new InvalidRequest('text: must not be empty');
    if (input.validDays !== undefined && !(Number.isInteger(input.validDays) && input.validDays >= 1)) throw new InvalidRequest('validDays: a whole number of days, at least 1');
    const at = this.#now().toISOString();
    await this.#registry.write(async (trx) => {
      // created_at orders versions; a version set in the same millisecond as the current one still comes after it.
      const newest = await trx.selectFrom('registry_aup').select(['version', 'created_at']).orderBy('created_at', 'desc').executeTakeFirst();
      if (await trx.selectFrom('registry_aup').select('version').where('version', '=', input.version).executeTakeFirst()) throw new Conflict(`AUP version '${input.version}' exists already: give a new version`);
      const created = newest && newest.created_at >= at ? new Date(Date.parse(newest.created_at) + 1).toISOString() : at;
      await trx.insertInto('registry_aup').values({ version: input.version, text: input.text, valid_days: input.validDays ?? null, created_at: created }).execute();
      await writeAudit(trx, at, actor, 'aup.set', 'aup', input.version, newest ? { version: newest.version } : undefined, { version: input.version, validDays: input.validDays ?? null });
    });
  }

  /** Config seeding: adds config.yaml's version unless the database already has it. */
  async seed(input: AupInput): Promise<void> {
    const known = await this.#db.selectFrom('registry_aup').select('version').where('version', '=', input.version).executeTakeFirst();
    if (known) return;
    try {
      await this.set('config', input);
    } catch (err) {
      // Another instance seeding at the same time won.
      if (!(err instanceof Conflict)) throw err;
    }
  }

  /** `user` accepts `version`, which must be the current one; accepting again renews the acceptance. */
  async accept(user: string, version: string): Promise<{ version: string; acceptedAt: string }> {
    const current = this.#registry.aup;
    if (!current) throw new Conflict('there is no AUP to accept');
    if (version !== current.version) throw new Conflict(`'${version}' is not the current AUP version ('${current.version}'): read it at /registry/aup`);
    const at = this.#now().toISOString();
    await this.#registry.write(async (trx) => {
      const before = await trx.selectFrom('registry_aup_acceptances').select('accepted_at').where('user_name', '=', user).where('version', '=', version).executeTakeFirst();
      if (before) await trx.updateTable('registry_aup_acceptances').set({ accepted_at: at }).where('user_name', '=', user).where('version', '=', version).execute();
      else await trx.insertInto('registry_aup_acceptances').values({ user_name: user, version, accepted_at: at }).execute();
      await writeAudit(trx, at, `user:${user}`, 'aup.accept', 'aup', `${version}/${user}`, before ? { acceptedAt: before.accepted_at } : undefined, { acceptedAt: at });
    });
    return { version, acceptedAt: at };
  }
}
