/**
 * Who may see and kill which job: the owner; members of the owner's group when the
 * group has JobSharing; JobAdministrator everything; JobMonitor sees everything but kills nothing.
 *
 * A job the caller may not see is answered exactly as a job that does not exist: the same 404 and words,
 * so that neither its existence nor its owner shows through. A job the caller sees but may not act on
 * is refused without naming its owner.
 */
import type { Principal } from '../auth/index.ts';
import { InsufficientPrivileges, NotFound } from '../kernel/errors.ts';
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

/** The answer for a job that does not exist, and for one the caller may not see. */
export function noSuchJob(jobId: number): NotFound {
  return new NotFound(`job ${jobId} does not exist`);
}

/**
 * The job, when `principal` may `verb` it. @throws NotFound for a job it may not see (as for no job at
 * all), InsufficientPrivileges for one it may only see (JobMonitor).
 */
export function checkMayAct<T extends JobOwnership>(principal: Principal, jobId: number, row: T | undefined, verb: string): T {
  if (!row || !canSeeJob(principal, row)) throw noSuchJob(jobId);
  if (!canKillJob(principal, row)) throw new InsufficientPrivileges(`${principal.username} may see job ${jobId} but not ${verb} it: only its owner, JobSharing members of its group and JobAdministrator may`);
  return row;
}

/** The job, when `principal` may see it. @throws NotFound for a job it may not see, as for no job at all. */
export function checkMaySee<T extends JobOwnership>(principal: Principal, jobId: number, row: T | undefined): T {
  if (!row || !canSeeJob(principal, row)) throw noSuchJob(jobId);
  return row;
}
