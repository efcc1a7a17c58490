/**
 * Who exists: users (by name and by certificate DN), groups with their members and properties, and setups.
 * Built once from the frozen configuration; lookups are O(1).
 */
import type { AppConfig } from '../kernel/config.ts';
import type { GroupConfig, UserConfig } from './config-schema.ts';

/** Group properties that grant privileges (README "Configuration"). */
export const Property = {
  JobAdministrator: 'JobAdministrator',
  JobMonitor: 'JobMonitor',
  JobSharing: 'JobSharing',
  CatalogueAdministrator: 'CatalogueAdministrator',
  Pilot: 'Pilot',
  /** Ban and unban sites and their resources (DIRAC's SiteManager). */
  SiteManager: 'SiteManager',
  /** Administer the registry: users, groups, memberships; read it through SCIM (docs/registry.md). */
  Admin: 'Admin',
} as const;

/** `active` unless suspended or removed; a past `expiresAt` makes an active user effectively expired. */
export type UserStatus = 'active' | 'suspended' | 'removed';
/** Who owns an entry: config.yaml (seeded at start-up) or the admin API. */
export type ManagedBy = 'config' | 'api';

export interface RegistryUser {
  name: string;
  dns: readonly string[];
  email: string | undefined;
  passwordHash: string | undefined;
  groups: readonly string[];
  /** The group a sign-in that names none gets (registry.users[].defaultGroup), when set. */
  defaultGroup: string | undefined;
  /** Upstream accounts (issuer + subject) that sign in as this user. */
  identities: readonly { issuer: string; subject: string }[];
  status: UserStatus;
  /** ISO date-time after which the user is expired; none: never. */
  expiresAt?: string | undefined;
  displayName?: string | undefined;
  managedBy: ManagedBy;
  /** ISO date-times. */
  createdAt: string;
  updatedAt: string;
}

/** A group with its current members (docs/registry.md "Read API"). */
export interface RegistryGroup {
  name: string;
  properties: readonly string[];
  /** Fair share; none: jobs.fairShare.shares or 1. */
  share?: number | undefined;
  description?: string | undefined;
  managedBy: ManagedBy;
  members: readonly { user: string; role: 'member' | 'manager'; endsAt?: string | undefined }[];
  managers: readonly string[];
  createdAt: string;
  updatedAt: string;
}

const identityKey = (issuer: string, subject: string) => JSON.stringify([issuer, subject]);

export class Registry {
  readonly #users = new Map<string, RegistryUser>();
  readonly #byDn = new Map<string, RegistryUser>();
  readonly #byIdentity = new Map<string, RegistryUser>();
  readonly #byEmail = new Map<string, RegistryUser[]>();
  readonly #groups = new Map<string, GroupConfig>();
  readonly setups: readonly string[];
  /** Changes with every registry write; from configuration alone it never changes. */
  readonly version: number = 0;
  /** When this snapshot was built: the creation and update time of entries that have no other. */
  readonly #loadedAt = new Date().toISOString();

  constructor(config: Pick<AppConfig, 'registry'>) {
    const membership = new Map<string, string[]>();
    for (const g of config.registry.groups) {
      this.#groups.set(g.name, g);
      for (const m of g.members) membership.set(m, [...(membership.get(m) ?? []), g.name]);
    }
    for (const u of config.registry.users as readonly UserConfig[]) {
      const user: RegistryUser = {
        name: u.name,
        dns: u.dns,
        email: u.email,
        passwordHash: u.passwordHash,
        groups: membership.get(u.name) ?? [],
        defaultGroup: u.defaultGroup,
        identities: u.identities ?? [],
        status: 'active',
        managedBy: 'config',
        createdAt: this.#loadedAt,
        updatedAt: this.#loadedAt,
      };
      this.#users.set(u.name, user);
      for (const dn of u.dns) this.#byDn.set(dn, user);
      for (const id of user.identities) this.#byIdentity.set(identityKey(id.issuer, id.subject), user);
      if (u.email) this.#byEmail.set(u.email.toLowerCase(), [...(this.#byEmail.get(u.email.toLowerCase()) ?? []), user]);
    }
    this.setups = config.registry.setups;
  }

  user(name: string): RegistryUser | undefined {
    return this.#users.get(name);
  }

  userByDn(dn: string): RegistryUser | undefined {
    return this.#byDn.get(dn);
  }

  /** The user an upstream account (OIDC `iss` + `sub`) is linked to. */
  userByIdentity(issuer: string, subject: string): RegistryUser | undefined {
    return this.#byIdentity.get(identityKey(issuer, subject));
  }

  /** The one user with this email (case-insensitive); undefined when none or several have it. */
  userByEmail(email: string): RegistryUser | undefined {
    const found = this.#byEmail.get(email.toLowerCase());
    return found?.length === 1 ? found[0] : undefined;
  }

  users(): RegistryUser[] {
    return [...this.#users.values()];
  }

  group(name: string): GroupConfig | undefined {
    return this.#groups.get(name);
  }

  groups(): RegistryGroup[] {
    return [...this.#groups.values()].map((g) => ({
      name: g.name,
      properties: g.properties,
      managedBy: 'config',
      members: g.members.map((user) => ({ user, role: 'member' as const })),
      managers: [],
      createdAt: this.#loadedAt,
      updatedAt: this.#loadedAt,
    }));
  }

  isMember(user: string, group: string): boolean {
    return this.#groups.get(group)?.members.includes(user) ?? false;
  }

  hasSetup(setup: string): boolean {
    return this.setups.includes(setup);
  }

  /** Properties of `group`; empty for an unknown group. */
  properties(group: string): readonly string[] {
    return this.#groups.get(group)?.properties ?? [];
  }

  /** Members of groups carrying `property` (for example, every Pilot). */
  groupsWithProperty(property: string): string[] {
    return [...this.#groups.values()].filter((g) => g.properties.includes(property)).map((g) => g.name);
  }
}

declare module '../kernel/context.ts' {
  interface AppContext {
    readonly registry: Registry;
  }
}
