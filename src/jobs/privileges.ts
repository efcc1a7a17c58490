/**
 * Who may see and kill which job (DESIGN "Privileges"): the owner; members of the owner's group when the
 * group has JobSharing; JobAdministrator everything; JobMonitor sees everything but kills nothing.
 */
import type { Principal } from '../auth/index.ts';
import { Property } from '../registry/index.ts';

export interface JobOwnership {
  owner: string;
  owner_group: string;
}

function shares(principal: Principal, job: JobOwnership): boolean {
  return principal.properties.includes(Property.JobSharing) && job.owner_group === principal.group;
}

export function canSeeJob(principal: Principal, job: JobOwnership): boolean {
  return (
    job.owner === principal.username ||
    principal.properties.includes(Property.JobAdministrator) ||
    principal.properties.includes(Property.JobMonitor) ||
    shares(principal, job)
  );
}

export function canKillJob(principal: Principal, job: JobOwnership): boolean {
  return job.owner === principal.username || principal.properties.includes(Property.JobAdministrator) || shares(principal, job);
}

/** Which jobs `allOwners=true` may show: all of them, those of one's group, or only one's own. */
export type Visibility = { kind: 'all' } | { kind: 'group'; owner: string; group: string } | { kind: 'own'; owner: string };

export function listVisibility(principal: Principal, allOwners: boolean): Visibility {
  if (!allOwners) return { kind: 'own', owner: principal.username };
  if (principal.properties.includes(Property.JobAdministrator) || principal.properties.includes(Property.JobMonitor)) return { kind: 'all' };
  if (principal.properties.includes(Property.JobSharing)) return { kind: 'group', owner: principal.username, group: principal.group };
  return { kind: 'own', owner: principal.username };
}
