/**
 * Whose runs a caller sees (docs/accounting.md "API"), the rule of GET /jobs: one's own; with `allOwners`,
 * every run for JobAdministrator and JobMonitor, the group's for JobSharing members. Written here again
 * from the principal's properties because accounting sits below jobs (it may not import it).
 */
import type { Principal } from '../auth/index.ts';
import { InsufficientPrivileges } from '../kernel/errors.ts';
import { Property } from '../registry/index.ts';
import type { Dimension } from './query.ts';

export type UsageFilters = Partial<Record<Dimension, readonly string[]>>;

/** Values allowed by both: the caller's filter (when given) and what it may see. */
function within(asked: readonly string[] | undefined, allowed: string): readonly string[] {
  return asked === undefined ? [allowed] : asked.filter((v) => v === allowed);
}

const monitors = (p: Principal) => p.properties.includes(Property.JobAdministrator) || p.properties.includes(Property.JobMonitor);

/**
 * The caller's filters narrowed to what it may see. A filter naming others' runs it may not see matches
 * nothing (an empty answer, as GET /jobs gives), rather than an error that would tell who has runs.
 */
export function visibleFilters(principal: Principal, allOwners: boolean, filters: UsageFilters): UsageFilters {
  if (allOwners && monitors(principal)) return filters;
  // JobSharing sees the group's runs as a whole; its members' runs in other groups stay theirs.
  if (allOwners && principal.properties.includes(Property.JobSharing)) return { ...filters, owner_group: within(filters.owner_group, principal.group) };
  return { ...filters, owner: within(filters.owner, principal.username) };
}

/** @throws InsufficientPrivileges unless the caller's group has JobAdministrator or JobMonitor. */
export function requireMonitor(principal: Principal, what: string): void {
  if (monitors(principal)) return;
  throw new InsufficientPrivileges(`${principal.username} in group ${principal.group} may not read ${what}: only groups with JobAdministrator or JobMonitor may`);
}

/** True when a filter allows no value: the answer is empty without asking the database. */
export function matchesNothing(filters: Partial<Record<string, readonly string[]>>): boolean {
  return Object.values(filters).some((values) => values !== undefined && values.length === 0);
}
