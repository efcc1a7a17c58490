/**
 * Job status values and MinorStatus's width, as the API states them: the server's state machine and the
 * client's commands both read them here.
 */

/** Status values of DIRAC's job state machine (DIRAC WorkloadManagementSystem/Client/JobStatus.py). */
export const JobStatus = {
  Received: 'Received',
  Checking: 'Checking',
  Waiting: 'Waiting',
  Matched: 'Matched',
  Running: 'Running',
  Completing: 'Completing',
  Stalled: 'Stalled',
  Rescheduled: 'Rescheduled',
  Done: 'Done',
  Failed: 'Failed',
  Killed: 'Killed',
  Deleted: 'Deleted',
} as const;
export type JobStatus = (typeof JobStatus)[keyof typeof JobStatus];

export const ALL_STATUSES: readonly JobStatus[] = Object.values(JobStatus);

/** Statuses a job leaves only by a reschedule or deletion: the job is out of activity. */
export const FINAL_STATUSES: ReadonlySet<JobStatus> = new Set([JobStatus.Done, JobStatus.Failed, JobStatus.Killed, JobStatus.Deleted]);

const BY_LOWER_CASE = new Map(ALL_STATUSES.map((s) => [s.toLowerCase(), s]));

/** `done`, `DONE` → `Done`, as DIRAC's commands take them; anything else unchanged, for the service to refuse by name. */
export function canonicalStatus(text: string): string {
  return BY_LOWER_CASE.get(text.toLowerCase()) ?? text;
}

export function isFinal(status: string): boolean {
  return FINAL_STATUSES.has(status as JobStatus);
}

/** The width of `minor_status` (the jobs domain's migrations.ts); PostgreSQL refuses a longer one. */
export const MINOR_STATUS_WIDTH = 512;

/**
 * `wrap(said)`, with `said` shortened (ending in …) as much as needed for the whole to fit `minor_status`.
 * For statuses the service composes around a client's words, each valid alone (an agent's MinorStatus of
 * up to 500 characters), which the wrapping would push past the column. Counts characters (code points),
 * as PostgreSQL does.
 */
export function wrapMinorStatus(said: string, wrap: (s: string) => string): string {
  const chars = [...said];
  const room = MINOR_STATUS_WIDTH - [...wrap('')].length;
  if (chars.length <= room) return wrap(said);
  return wrap(`${chars.slice(0, Math.max(0, room - 1)).join('')}…`);
}
