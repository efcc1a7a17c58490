/**
 * Who exists: users (by name, certificate DN, upstream identity, email), groups with their members and
 * properties, and setups. An in-memory snapshot of the registry tables (docs/registry.md) so every lookup
 * stays synchronous; `refresh()` reloads it when max(registry_audit.id) moved, and `poll()` does that on a
 * timer so changes made through another instance show up within `registry.refreshMs`.
 */
import type { AppConfig } from '../kernel/config.ts';
import type { Transaction } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import type { Database } from '../kernel/db/schema.ts';
import { identityKey, loadSnapshot, registryVersion, type CurrentAup, type RegistryGroup, type RegistryUser, type Snapshot } from './snapshot.ts';

export type { RegistryGroup, RegistryUser } from './snapshot.ts';

/** Group properties that grant privileges (README "Configuration"). */
export const Property = {
  JobAdministrator: 'JobAdministrator',
  JobMonitor: 'JobMonitor',
  JobSharing: 'JobSharing',
  CatalogueAdministrator: 'CatalogueAdministrator',
  Pilot: 'Pilot',
  /** Ban and unban sites and their resources (DIRAC's SiteManager). */
  SiteManager: 'SiteManager',
  /** Administer the registry: users, groups, memberships, the audit log (docs/registry.md). */
  Admin: 'Admin',
} as const;

export class Registry {
  #s: Snapshot;
  readonly #db: Db;
  readonly #refreshMs: number;
  /** Loads run one after another so an older one never replaces a newer snapshot. */
  #chain: Promise<void> = Promise.resolve();

  private constructor(db: Db, snapshot: Snapshot, refreshMs: number) {
    this.#db = db;
    this.#s = snapshot;
    this.#refreshMs = refreshMs;
  }

  /** The registry as the database holds it now (seed it from config.yaml first: `seedRegistry`). */
  static async load(db: Db, config: Pick<AppConfig, 'registry'>): Promise<Registry> {
    return new Registry(db, await loadSnapshot(db), config.registry.refreshMs ?? 1000);
  }

  /** max(registry_audit.id) when this snapshot was read. */
  get version(): number {
    return this.#s.version;
  }

  /**
   * Runs a registry write in one transaction, then reloads the snapshot, so this instance's next request
   * already sees it (other instances see it at their next poll). Every writer goes through here.
   */
  async write<T>(fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    const result = await this.#db.transaction().execute(fn);
    await this.refresh();
    return result;
  }

  /** Reloads the snapshot if the database moved on (or a membership end or expiry passed). */
  refresh(): Promise<void> {
    const next = this.#chain.then(async () => {
      const version = await registryVersion(this.#db);
      if (version === this.#s.version && Date.now() < this.#s.staleAt) return;
      this.#s = await loadSnapshot(this.#db);
    });
    this.#chain = next.catch(() => {});
    return next;
  }

  /** Starts polling the database; returns the function that stops it (for ctx.onClose). */
  poll(onError: (err: unknown) => void = () => {}): () => void {
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      this.refresh()
        .catch(onError)
        .finally(() => {
          busy = false;
        });
    }, this.#refreshMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  get setups(): readonly string[] {
    return this.#s.setups;
  }

  /** Any user by name, also suspended, expired or removed ones (jobs and files stay attributed). */
  user(name: string): RegistryUser | undefined {
    return this.#s.users.get(name);
  }

  /** The user (not removed) holding this certificate DN. */
  userByDn(dn: string): RegistryUser | undefined {
    return this.#s.byDn.get(dn);
  }

  /** The user (not removed) an upstream account (OIDC `iss` + `sub`) is linked to. */
  userByIdentity(issuer: string, subject: string): RegistryUser | undefined {
    return this.#s.byIdentity.get(identityKey(issuer, subject));
  }

  /** The one user (not removed) with this email (case-insensitive); undefined when none or several have it. */
  userByEmail(email: string): RegistryUser | undefined {
    const found = this.#s.byEmail.get(email.toLowerCase());
    return found?.length === 1 ? found[0] : undefined;
  }

  users(): RegistryUser[] {
    return [...this.#s.users.values()];
  }

  /**
   * Why `name` may not get tokens or use sessions now (`suspended: <reason>`, `expired on <date>`,
   * `removed`, `unknown user`); undefined when nothing bars them. The AUP is checked elsewhere.
   */
  barred(name: string, now: Date = new Date()): string | undefined {
    const u = this.#s.users.get(name);
    if (!u) return 'unknown user';
    if (u.status === 'removed') return 'removed';
    if (u.status === 'suspended') return u.statusReason ? `suspended: ${u.statusReason}` : 'suspended';
    if (u.expiresAt !== undefined && Date.parse(u.expiresAt) <= now.getTime()) return `expired on ${u.expiresAt.slice(0, 10)}`;
    return undefined;
  }

  /** The current acceptable-use policy, if one is set. */
  get aup(): CurrentAup | undefined {
    return this.#s.aup;
  }

  /**
   * The AUP `name` must accept before getting tokens: when one is set and they have not accepted its
   * current version, or accepted it more than validDays ago. Undefined when nothing is pending.
   */
  aupPending(name: string, now: Date = new Date()): { version: string; text: string } | undefined {
    const aup = this.#s.aup;
    if (!aup) return undefined;
    const at = this.#s.aupAccepted.get(name);
    const fresh = at !== undefined && (aup.validDays === undefined || Date.parse(at) + aup.validDays * 86_400_000 > now.getTime());
    return fresh ? undefined : { version: aup.version, text: aup.text };
  }

  group(name: string): RegistryGroup | undefined {
    return this.#s.groups.get(name);
  }

  groups(): RegistryGroup[] {
    return [...this.#s.groups.values()];
  }

  isMember(user: string, group: string): boolean {
    return this.#s.users.get(user)?.groups.includes(group) ?? false;
  }

  isManager(user: string, group: string): boolean {
    return this.#s.groups.get(group)?.managers.includes(user) ?? false;
  }

  hasSetup(setup: string): boolean {
    return this.#s.setups.includes(setup);
  }

  /** Properties of `group`; empty for an unknown group. */
  properties(group: string): readonly string[] {
    return this.#s.groups.get(group)?.properties ?? [];
  }

  /** Groups carrying `property` (for example, every Pilot group). */
  groupsWithProperty(property: string): string[] {
    return [...this.#s.groups.values()].filter((g) => g.properties.includes(property)).map((g) => g.name);
  }
}

declare module '../kernel/context.ts' {
  interface AppContext {
    readonly registry: Registry;
  }
}
