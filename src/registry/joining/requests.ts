/**
 * Joining a VO (docs/registry.md "Joining"): registration requests of upstream accounts nobody knows yet,
 * group requests of members, and their decisions. Each write is one transaction with its audit rows (a
 * decision that creates a user also writes user.create and membership.add), then this instance's snapshot
 * is refreshed and the webhook, if configured, is told after the commit.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../../kernel/db/schema.ts';
import type { Db } from '../../kernel/db/database.ts';
import { Conflict, InvalidRequest, NotFound } from '../../kernel/errors.ts';
import { NAME_PATTERN } from '../admin.ts';
import { writeAudit } from '../audit.ts';
import type { Registry } from '../registry.ts';
import { membershipState, userState } from '../states.ts';
import type { JoinEvent, Webhook } from './webhook.ts';

type Trx = Transaction<Database>;
type Row = Database['registry_requests'];

export type RequestStatus = 'pending' | 'approved' | 'rejected' | 'withdrawn';

export interface JoinRequest {
  id: number;
  kind: 'registration' | 'group';
  /** The user asking (group) or the name asked for (registration). */
  user: string;
  group: string;
  status: RequestStatus;
  message: string | null;
  /** Registration: the identity provider (its name in identityProviders) and the upstream account. */
  provider: string | null;
  issuer: string | null;
  subject: string | null;
  email: string | null;
  displayName: string | null;
  createdAt: string;
  decidedBy: string | null;
  decidedAt: string | null;
  reason: string | null;
}

export interface Registration {
  user: string;
  group: string;
  provider: string;
  issuer: string;
  subject: string;
  email?: string | undefined;
  displayName?: string | undefined;
  message?: string | undefined;
}

export interface RequestQuery {
  status?: RequestStatus;
  group?: string;
  /** Only requests of these groups or by this user (a manager's or a member's view); absent: all. */
  visibleTo?: { user: string; groups: readonly string[] };
  offset?: number;
  limit?: number;
}

const toRequest = (r: { [K in keyof Row]: K extends 'id' ? number | string : Row[K] }): JoinRequest => ({
  id: Number(r.id),
  kind: r.kind === 'registration' ? 'registration' : 'group',
  user: r.user_name,
  group: r.group_name,
  status: r.status as RequestStatus,
  message: r.message,
  provider: r.provider,
  issuer: r.issuer,
  subject: r.subject,
  email: r.email,
  displayName: r.display_name,
  createdAt: r.created_at,
  decidedBy: r.decided_by,
  decidedAt: r.decided_at,
  reason: r.reason,
});

function checkText(field: string, value: string | undefined, max: number): string | null {
  if (value === undefined || value.trim() === '') return null;
  if (value.length > max) throw new InvalidRequest(`${field}: at most ${max} characters`);
  return value;
}

export class Joining {
  readonly #db: Db;
  readonly #registry: Registry;
  readonly #webhook: Webhook | undefined;
  readonly #now: () => Date;

  constructor(db: Db, registry: Registry, webhook?: Webhook, now: () => Date = () => new Date()) {
    this.#db = db;
    this.#registry = registry;
    this.#webhook = webhook;
    this.#now = now;
  }

  get webhook(): Webhook | undefined {
    return this.#webhook;
  }

  async #write<T>(fn: (trx: Trx, at: string) => Promise<T>): Promise<T> {
    const at = this.#now().toISOString();
    return this.#registry.write((trx) => fn(trx, at));
  }

  #notify(event: JoinEvent, request: JoinRequest): void {
    this.#webhook?.notify(event, request);
  }

  async get(id: number): Promise<JoinRequest | undefined> {
    const row = await this.#db.selectFrom('registry_requests').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRequest(row) : undefined;
  }

  /** Newest first. */
  async list(q: RequestQuery = {}): Promise<{ requests: JoinRequest[]; total: number }> {
    let query = this.#db.selectFrom('registry_requests');
    if (q.status) query = query.where('status', '=', q.status);
    if (q.group) query = query.where('group_name', '=', q.group);
    const v = q.visibleTo;
    if (v) {
      query = query.where((eb) => {
        const own = eb.and([eb('kind', '=', 'group'), eb('user_name', '=', v.user)]);
        return v.groups.length ? eb.or([own, eb('group_name', 'in', [...v.groups])]) : own;
      });
    }
    const [rows, count] = await Promise.all([
      query.selectAll().orderBy('id', 'desc').offset(q.offset ?? 0).limit(q.limit ?? 100).execute(),
      query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst(),
    ]);
    return { requests: rows.map(toRequest), total: Number(count?.n ?? 0) };
  }

  /**
   * A free user name from the candidates (preferred_username, the email's local part): characters a name
   * may not have are dropped, and a number is added while the name is taken or asked for.
   */
  async proposeName(candidates: readonly (string | undefined)[]): Promise<string> {
    const bases = candidates.map((c) => (c ?? '').replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 56)).filter((c) => c.length > 0);
    const asked = new Set((await this.#db.selectFrom('registry_requests').select('user_name').where('kind', '=', 'registration').where('status', '=', 'pending').execute()).map((r) => r.user_name));
    const free = (n: string) => !this.#registry.user(n) && !asked.has(n);
    for (const base of bases) if (free(base)) return base;
    const base = bases[0] ?? 'user';
    for (let i = 2; ; i++) if (free(`${base}${i}`)) return `${base}${i}`;
  }

  /** The pending registration of this upstream account, if it made one. */
  async pendingRegistration(issuer: string, subject: string): Promise<JoinRequest | undefined> {
    const row = await this.#db
      .selectFrom('registry_requests')
      .selectAll()
      .where('kind', '=', 'registration')
      .where('status', '=', 'pending')
      .where('issuer', '=', issuer)
      .where('subject', '=', subject)
      .executeTakeFirst();
    return row ? toRequest(row) : undefined;
  }

  async #checkRegistration(trx: Trx, r: Registration, ignoreRequest?: number): Promise<void> {
    if (!NAME_PATTERN.test(r.user)) throw new InvalidRequest(`user name '${r.user}' must be 1-64 of A-Z a-z 0-9 _ . -`);
    if (await userState(trx, r.user)) throw new Conflict(`the user name '${r.user}' is taken: choose another`);
    let asked = trx.selectFrom('registry_requests').select('id').where('kind', '=', 'registration').where('status', '=', 'pending').where('user_name', '=', r.user);
    if (ignoreRequest !== undefined) asked = asked.where('id', '<>', ignoreRequest);
    if (await asked.executeTakeFirst()) throw new Conflict(`the user name '${r.user}' is already asked for: choose another`);
    const linked = await trx.selectFrom('registry_identities').select('user_name').where('issuer', '=', r.issuer).where('subject', '=', r.subject).executeTakeFirst();
    if (linked) throw new Conflict(`this upstream account already signs in as '${linked.user_name}'`);
    if (!(await trx.selectFrom('registry_groups').select('name').where('name', '=', r.group).executeTakeFirst())) throw new NotFound(`no group '${r.group}'`);
  }

  /** A registration request (identityProviders[].registration: approval); one pending per upstream account. */
  async requestRegistration(r: Registration): Promise<JoinRequest> {
    const message = checkText('message', r.message, 1024);
    const created = await this.#write(async (trx, at) => {
      const mine = await trx.selectFrom('registry_requests').select('id').where('kind', '=', 'registration').where('status', '=', 'pending').where('issuer', '=', r.issuer).where('subject', '=', r.subject).executeTakeFirst();
      if (mine) throw new Conflict(`this account's registration request ${mine.id} is already pending`);
      await this.#checkRegistration(trx, r);
      const row = await trx
        .insertInto('registry_requests')
        .values({
          kind: 'registration',
          user_name: r.user,
          group_name: r.group,
          provider: r.provider,
          issuer: r.issuer,
          subject: r.subject,
          email: checkText('email', r.email, 320),
          display_name: checkText('displayName', r.displayName, 256),
          status: 'pending',
          message,
          created_at: at,
          decided_by: null,
          decided_at: null,
          reason: null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      const request = toRequest(row);
      await writeAudit(trx, at, `idp:${r.provider}`, 'request.create', 'request', String(request.id), undefined, request);
      return request;
    });
    this.#notify('request.created', created);
    return created;
  }

  /** Automatic registration (identityProviders[].registration: auto): the user exists at once. */
  async registerNow(r: Registration): Promise<void> {
    await this.#write(async (trx, at) => {
      await this.#checkRegistration(trx, r);
      await this.#createUser(trx, at, `idp:${r.provider}`, r);
    });
  }

  async #createUser(trx: Trx, at: string, actor: string, r: Pick<Registration, 'user' | 'group' | 'issuer' | 'subject' | 'email' | 'displayName'>): Promise<void> {
    await trx
      .insertInto('registry_users')
      .values({ name: r.user, email: r.email ?? null, display_name: r.displayName ?? null, status: 'active', expires_at: null, password_hash: null, default_group: null, managed_by: 'api', created_at: at, updated_at: at, status_reason: null })
      .execute();
    await trx.insertInto('registry_identities').values({ issuer: r.issuer, subject: r.subject, user_name: r.user }).execute();
    await writeAudit(trx, at, actor, 'user.create', 'user', r.user, undefined, await userState(trx, r.user));
    await this.#addMember(trx, at, actor, r.group, r.user);
  }

  async #addMember(trx: Trx, at: string, actor: string, group: string, user: string): Promise<void> {
    if (await membershipState(trx, group, user)) return;
    await trx.insertInto('registry_memberships').values({ group_name: group, user_name: user, role: 'member', ends_at: null, managed_by: 'api', created_at: at }).execute();
    await writeAudit(trx, at, actor, 'membership.add', 'membership', `${group}/${user}`, undefined, await membershipState(trx, group, user));
  }

  /** A member asks to join `group`; one pending request per user and group. */
  async requestGroup(user: string, group: string, message?: string): Promise<JoinRequest> {
    const text = checkText('message', message, 1024);
    const created = await this.#write(async (trx, at) => {
      if (!(await trx.selectFrom('registry_groups').select('name').where('name', '=', group).executeTakeFirst())) throw new NotFound(`no group '${group}'`);
      if (this.#registry.isMember(user, group)) throw new Conflict(`${user} is already a member of '${group}'`);
      const open = await trx.selectFrom('registry_requests').select('id').where('kind', '=', 'group').where('status', '=', 'pending').where('user_name', '=', user).where('group_name', '=', group).executeTakeFirst();
      if (open) throw new Conflict(`${user}'s request ${open.id} to join '${group}' is already pending`);
      const u = this.#registry.user(user);
      const row = await trx
        .insertInto('registry_requests')
        .values({ kind: 'group', user_name: user, group_name: group, provider: null, issuer: null, subject: null, email: u?.email ?? null, display_name: u?.displayName ?? null, status: 'pending', message: text, created_at: at, decided_by: null, decided_at: null, reason: null })
        .returningAll()
        .executeTakeFirstOrThrow();
      const request = toRequest(row);
      await writeAudit(trx, at, `user:${user}`, 'request.create', 'request', String(request.id), undefined, request);
      return request;
    });
    this.#notify('request.created', created);
    return created;
  }

  /**
   * Approves (the user is created, or the membership added, in the same transaction) or rejects a pending
   * request. Whether `actor` may decide is the caller's check.
   */
  async decide(actor: string, id: number, decision: 'approve' | 'reject', reason?: string): Promise<JoinRequest> {
    const why = checkText('reason', reason, 512);
    const decided = await this.#write(async (trx, at) => {
      const before = await trx.selectFrom('registry_requests').selectAll().where('id', '=', id).executeTakeFirst();
      if (!before) throw new NotFound(`no request ${id}`);
      const status = decision === 'approve' ? 'approved' : 'rejected';
      const res = await trx.updateTable('registry_requests').set({ status, decided_by: actor, decided_at: at, reason: why }).where('id', '=', id).where('status', '=', 'pending').executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) throw new Conflict(`request ${id} is ${before.status}, not pending`);
      const r = toRequest(before);
      if (decision === 'approve' && r.kind === 'registration') {
        const reg = { user: r.user, group: r.group, provider: r.provider ?? '', issuer: r.issuer ?? '', subject: r.subject ?? '', email: r.email ?? undefined, displayName: r.displayName ?? undefined };
        await this.#checkRegistration(trx, reg, id);
        await this.#createUser(trx, at, actor, reg);
      } else if (decision === 'approve') {
        const u = await userState(trx, r.user);
        if (!u || u.status === 'removed') throw new Conflict(`user '${r.user}' no longer exists`);
        if (!(await trx.selectFrom('registry_groups').select('name').where('name', '=', r.group).executeTakeFirst())) throw new Conflict(`group '${r.group}' no longer exists`);
        await this.#addMember(trx, at, actor, r.group, r.user);
      }
      const after = { ...r, status, decidedBy: actor, decidedAt: at, reason: why } satisfies JoinRequest;
      await writeAudit(trx, at, actor, `request.${decision}`, 'request', String(id), r, after);
      return after;
    });
    this.#notify('request.decided', decided);
    return decided;
  }

  /** The requester takes a pending group request back. */
  async withdraw(user: string, id: number): Promise<JoinRequest> {
    return this.#write(async (trx, at) => {
      const before = await trx.selectFrom('registry_requests').selectAll().where('id', '=', id).executeTakeFirst();
      if (!before || before.kind !== 'group' || before.user_name !== user) throw new NotFound(`no request ${id} of ${user}`);
      const res = await trx.updateTable('registry_requests').set({ status: 'withdrawn', decided_by: `user:${user}`, decided_at: at }).where('id', '=', id).where('status', '=', 'pending').executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) throw new Conflict(`request ${id} is ${before.status}, not pending`);
      const r = toRequest(before);
      const after: JoinRequest = { ...r, status: 'withdrawn', decidedBy: `user:${user}`, decidedAt: at };
      await writeAudit(trx, at, `user:${user}`, 'request.withdraw', 'request', String(id), r, after);
      return after;
    });
  }
}
