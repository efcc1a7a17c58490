/**
 * The job model (README "Jobs"): status values, attribute names and how a row becomes a JSON record.
 */
import type { Selectable } from 'kysely';
import type { JobTable } from './tables.ts';
import { ATTRIBUTE_TYPES, type AttributeName } from '../protocol/job-attributes.ts';

export { ALL_STATUSES, FINAL_STATUSES, isFinal, JobStatus } from '../protocol/job-status.ts';
export type { AttributeName } from '../protocol/job-attributes.ts';

type Row = Selectable<JobTable>;

/** Attribute name → column and value type (the API's, ATTRIBUTE_TYPES); any of them may restrict GET /jobs. */
export const ATTRIBUTES = {
  JobID: { column: 'job_id', type: 'integer' },
  JobName: { column: 'job_name', type: 'string' },
  JobGroup: { column: 'job_group', type: 'string' },
  JobType: { column: 'job_type', type: 'string' },
  Owner: { column: 'owner', type: 'string' },
  OwnerDN: { column: 'owner_dn', type: 'string' },
  OwnerGroup: { column: 'owner_group', type: 'string' },
  Setup: { column: 'setup', type: 'string' },
  Site: { column: 'site', type: 'string' },
  Status: { column: 'status', type: 'string' },
  MinorStatus: { column: 'minor_status', type: 'string' },
  ApplicationStatus: { column: 'application_status', type: 'string' },
  UserPriority: { column: 'user_priority', type: 'integer' },
  RescheduleCounter: { column: 'reschedule_counter', type: 'integer' },
  SubmissionTime: { column: 'submission_time', type: 'string' },
  LastUpdateTime: { column: 'last_update_time', type: 'string' },
  StartExecTime: { column: 'start_exec_time', type: 'string' },
  EndExecTime: { column: 'end_exec_time', type: 'string' },
  HeartBeatTime: { column: 'heartbeat_time', type: 'string' },
  ExitCode: { column: 'exit_code', type: 'integer' },
  NumberOfProcessors: { column: 'processors', type: 'integer' },
  MaxRAM: { column: 'max_ram', type: 'integer' },
  NumberOfGPUs: { column: 'gpus', type: 'integer' },
  Tags: { column: 'tags', type: 'string' },
  Platform: { column: 'platform', type: 'string' },
  CPUTime: { column: 'cpu_time', type: 'integer' },
  TaskQueueID: { column: 'tq_id', type: 'integer' },
  PilotReference: { column: 'pilot_reference', type: 'string' },
  HoldReason: { column: 'hold_reason', type: 'string' },
  RetryCounter: { column: 'retry_counter', type: 'integer' },
  WorkflowID: { column: 'workflow_id', type: 'integer' },
} as const satisfies { [K in AttributeName]: { column: keyof Row; type: (typeof ATTRIBUTE_TYPES)[K] } };

type IntegerAttribute = { [K in AttributeName]: (typeof ATTRIBUTES)[K]['type'] extends 'integer' ? K : never }[AttributeName];
const INT32 = { minimum: -2147483648, maximum: 2147483647 };
const SAFE = { minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER };

/**
 * The values each integer attribute's column holds: PostgreSQL refuses to compare a 32-bit column with a
 * number outside it (a 500), SQLite compares any 64-bit one, so values outside are refused up front alike.
 */
export const INTEGER_RANGES: Record<IntegerAttribute, { minimum: number; maximum: number }> = {
  JobID: SAFE,
  UserPriority: INT32,
  RescheduleCounter: INT32,
  RetryCounter: INT32,
  ExitCode: INT32,
  NumberOfProcessors: INT32,
  MaxRAM: INT32,
  NumberOfGPUs: INT32,
  // bigint columns.
  CPUTime: SAFE,
  TaskQueueID: SAFE,
  WorkflowID: SAFE,
};
export const ATTRIBUTE_NAMES = Object.keys(ATTRIBUTES) as AttributeName[];
export const ATTRIBUTE_COLUMNS = ATTRIBUTE_NAMES.map((n) => ATTRIBUTES[n].column);

export type JobRecord = Record<AttributeName, string | number | null>;

export function toRecord(row: Pick<Row, (typeof ATTRIBUTE_COLUMNS)[number]>): JobRecord {
  const out = {} as JobRecord;
  for (const name of ATTRIBUTE_NAMES) {
    const value = row[ATTRIBUTES[name].column];
    out[name] = value === undefined ? null : (value as string | number | null);
  }
  return out;
}

export interface StatusHistoryEntry {
  Status: string;
  MinorStatus: string;
  ApplicationStatus: string;
  StatusTime: string;
  Source: string;
}
