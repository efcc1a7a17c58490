/** Job attributes as the API names them, and how the monitor shows them. */
import type { operations } from '@dirigo/client/schema';
import { formatTimestamp } from '../time-format.ts';

export type JobRecord = operations['listJobs']['responses'][200]['content']['application/json']['jobs'][number];
export type JobDetail = operations['getJob']['responses'][200]['content']['application/json'];
export type Attribute = keyof JobRecord;

export const ATTRIBUTES: readonly Attribute[] = [
  'JobID', 'JobName', 'Status', 'MinorStatus', 'ApplicationStatus', 'Site', 'Owner', 'OwnerGroup', 'JobGroup', 'JobType',
  'Setup', 'OwnerDN', 'UserPriority', 'RescheduleCounter', 'SubmissionTime', 'LastUpdateTime', 'StartExecTime', 'EndExecTime',
  'HeartBeatTime', 'ExitCode', 'NumberOfProcessors', 'MaxRAM', 'NumberOfGPUs', 'Tags', 'Platform', 'CPUTime', 'TaskQueueID', 'PilotReference', 'HoldReason', 'RetryCounter', 'WorkflowID',
];

/** Attributes whose values are integers: a search compares them as numbers. */
export const INTEGER_ATTRIBUTES: readonly Attribute[] = ['JobID', 'UserPriority', 'RescheduleCounter', 'ExitCode', 'NumberOfProcessors', 'MaxRAM', 'NumberOfGPUs', 'CPUTime', 'TaskQueueID', 'RetryCounter', 'WorkflowID'];

export const DEFAULT_COLUMNS: readonly Attribute[] = ['JobID', 'JobName', 'Status', 'MinorStatus', 'ApplicationStatus', 'Site', 'Owner', 'SubmissionTime', 'LastUpdateTime'];

export const TIME_ATTRIBUTES: readonly Attribute[] = ['SubmissionTime', 'LastUpdateTime', 'StartExecTime', 'EndExecTime', 'HeartBeatTime'];

/** Attributes filtered by value, offered from the values present (the summary per value); times take a range. */
export const FILTERABLE: readonly Attribute[] = ATTRIBUTES.filter((a) => !TIME_ATTRIBUTES.includes(a));

export const STATUSES = ['Received', 'Checking', 'Waiting', 'Matched', 'Running', 'Completing', 'Stalled', 'Done', 'Failed', 'Killed', 'Deleted'] as const;

/** Statuses a job never leaves by itself: nothing runs any more, so there is nothing to kill. */
const FINAL_STATUSES: ReadonlySet<string> = new Set(['Done', 'Failed', 'Killed', 'Deleted']);

export function isFinal(status: string | null | undefined): boolean {
  return FINAL_STATUSES.has(status ?? '');
}

/** A status's colour; each is also written out, so colour is never the only sign. */
export function statusColor(status: string | null | undefined): string {
  switch (status) {
    case 'Done':
      return 'green';
    case 'Failed':
    case 'Stalled':
      return 'red';
    case 'Killed':
    case 'Deleted':
      return 'gray';
    case 'Running':
    case 'Completing':
      return 'blue';
    case 'Matched':
      return 'cyan';
    default:
      return 'yellow';
  }
}

export function formatValue(attribute: Attribute, value: unknown): string {
  if (value === null || value === undefined) return '';
  if (TIME_ATTRIBUTES.includes(attribute) && typeof value === 'string') return formatTimestamp(value);
  return String(value);
}
