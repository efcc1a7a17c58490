/**
 * The job attributes the API lists, restricts and sorts by (GET /jobs, POST /jobs/search), with the type of
 * each value, and the comparison operators of a search condition. Which column holds each is the jobs
 * domain's business (model.ts).
 */

/** Attribute name → the type of its values. */
export const ATTRIBUTE_TYPES = {
  JobID: 'integer',
  JobName: 'string',
  JobGroup: 'string',
  JobType: 'string',
  Owner: 'string',
  OwnerDN: 'string',
  OwnerGroup: 'string',
  Setup: 'string',
  Site: 'string',
  Status: 'string',
  MinorStatus: 'string',
  ApplicationStatus: 'string',
  UserPriority: 'integer',
  RescheduleCounter: 'integer',
  SubmissionTime: 'string',
  LastUpdateTime: 'string',
  StartExecTime: 'string',
  EndExecTime: 'string',
  HeartBeatTime: 'string',
  ExitCode: 'integer',
  // The requirements (docs/matching.md), as matching reads them: the fewest processors until matched, then
  // the number given; lists comma-separated and sorted ('' for none).
  NumberOfProcessors: 'integer',
  MaxRAM: 'integer',
  NumberOfGPUs: 'integer',
  Tags: 'string',
  Platform: 'string',
  CPUTime: 'integer',
  TaskQueueID: 'integer',
  // The pilot that last took it (docs/pilots.md), its PilotID as text; null until a pilot takes it.
  PilotReference: 'string',
  // Workflows (docs/workflows.md): why a Received job may not wait yet ('' for none), the automatic retries
  // it used, and the workflow it belongs to (null for none).
  HoldReason: 'string',
  RetryCounter: 'integer',
  WorkflowID: 'integer',
} as const satisfies Record<string, 'string' | 'integer'>;

export type AttributeName = keyof typeof ATTRIBUTE_TYPES;

/** The operators of a search condition (POST /jobs/search). */
export const OPERATORS = ['eq', 'neq', 'in', 'not in', 'lt', 'le', 'gt', 'ge', 'like'] as const;
export type Operator = (typeof OPERATORS)[number];
