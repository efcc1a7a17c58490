import type { Generated } from 'kysely';

/** One row per job: the job attributes (model.ts), the manifest, sandboxes and the executor's claim. */
export interface JobTable {
  job_id: Generated<number>;
  job_name: string;
  job_group: string;
  job_type: string;
  owner: string;
  owner_dn: string;
  owner_group: string;
  setup: string;
  /** The site it runs on; `ANY` before matching, or the one site it may run on. */
  site: string;
  /** `,A,B,` when the manifest names sites (for matching), null when any site will do. */
  sites: string | null;
  status: string;
  minor_status: string;
  application_status: string;
  user_priority: number;
  reschedule_counter: number;
  submission_time: string;
  last_update_time: string;
  start_exec_time: string | null;
  end_exec_time: string | null;
  heartbeat_time: string | null;
  exit_code: number | null;
  /** The stored manifest, JSON. */
  manifest: string;
  input_sandbox: string | null;
  input_sandbox_size: number | null;
  output_sandbox: string | null;
  output_sandbox_size: number | null;
  /** The instance whose executor holds the job (claimed with a conditional update). */
  executor_id: string | null;
  /** The backend's handle: a local process (pid, start time, host) or a batch job id; JSON. */
  executor_ref: string | null;
  /** Until when the holder's claim is good; renewed while the job runs. */
  lease_until: string | null;
  /** NumberOfProcessors: the fewest it asked for until matched, then the number it was given. */
  processors: Generated<number>;
  /** MaxRAM in MB, 0 when not asked. */
  max_ram: Generated<number>;
  gpus: Generated<number>;
  /** Tags asked for, sorted, comma-separated; '' for none. */
  tags: Generated<string>;
  /** Platforms accepted, sorted, comma-separated; '' for any. */
  platform: Generated<string>;
  /** CPUTime asked for, seconds; 0 when not asked. */
  cpu_time: Generated<number>;
  /** Its task queue while it waits (and the last one after). */
  tq_id: number | null;
  /** The pilot that last took it (its PilotID), set by the claim; null until a pilot takes it. */
  pilot_reference: string | null;
  /**
   * Why a Received job may not wait yet (docs/workflows.md): `Held`, `ExitCode` (OnExitHold), `Dependency`,
   * `Throttled`, `BackOff`; '' for any other job.
   */
  hold_reason: Generated<string>;
  /** A retry's back-off: the job waits again no earlier than this (ISO time); null otherwise. */
  not_before: string | null;
  /** Automatic retries used (MaxRetries); reschedules by hand count in reschedule_counter. */
  retry_counter: Generated<number>;
  /** The workflow (or throttled parametric set) it belongs to; null for a job on its own. */
  workflow_id: number | null;
  /** Its node's name within the workflow. */
  workflow_node: string | null;
}

/** A workflow, or a parametric set with MaxRunning (docs/workflows.md). */
export interface WorkflowTable {
  workflow_id: Generated<number>;
  name: string;
  /** `workflow` (POST /workflows) or `parametric` (POST /jobs with MaxRunning). */
  kind: string;
  owner: string;
  owner_group: string;
  /** The most of its jobs Waiting, Matched, Running, Completing or Stalled at once; null for no cap. */
  max_running: number | null;
  /** Its nodes as submitted, JSON: [{ Name, DependsOn: [names], DependencyType }]. */
  nodes: string;
  submission_time: string;
}

/** Job `job_id` waits for job `parent_id` under `condition` (afterok, afterany, afternotok). */
export interface JobDependencyTable {
  job_id: number;
  parent_id: number;
  condition: string;
}

/** Waiting jobs grouped by owner, group and requirements (docs/matching.md). */
export interface TaskQueueTable {
  tq_id: Generated<number>;
  owner: string;
  owner_group: string;
  req_hash: string;
  requirements: string;
  job_type: string;
  min_processors: number;
  max_processors: number;
  max_ram: number;
  gpus: number;
  cpu_time: number;
  tags: string;
  platforms: string;
  sites: string | null;
  banned_sites: string;
  waiting: Generated<number>;
  created_at: string;
}

/** Changes of task_queues.waiting not yet folded into it (PostgreSQL's triggers append them). */
export interface TaskQueueDeltaTable {
  id: Generated<number>;
  tq_id: number;
  n: number;
}

/** Each group's (owner '') and user's decayed usage, for fair share. */
export interface FairShareUsageTable {
  owner_group: string;
  owner: string;
  usage: number;
  updated_at: string;
}

export interface JobStatusHistoryTable {
  id: Generated<number>;
  job_id: number;
  status: string;
  minor_status: string;
  application_status: string;
  status_time: string;
  source: string;
}

/** Key/value parameters a running job reports about itself (DIRAC's job parameters). */
export interface JobParameterTable {
  /** Grows with every change: the events stream follows it. */
  id: Generated<number>;
  job_id: number;
  name: string;
  value: string;
  time: string;
}

/** Secrets of the jobs domain, made once and shared by every instance (the job-token key). */
export interface JobsSecretTable {
  name: string;
  value: string;
}

/** The end of an agent's job's StdOutput, sent with its heartbeats (GET /jobs/{jid}/peek). */
export interface JobOutputTailTable {
  job_id: number;
  output: string;
  size: number;
  time: string;
}

/** Job counts per combination of counted attributes (counts.ts), and the changes not yet folded into them. */
export interface JobCountTable {
  owner: string;
  owner_group: string;
  setup: string;
  site: string;
  status: string;
  job_group: string;
  job_type: string;
  n: number;
}

export interface JobCountDeltaTable extends JobCountTable {
  id: Generated<number>;
}

/**
 * The registry of sandboxes (docs/sandboxes.md): one row per sha256 and owner group, so that deduplication
 * answers a group only about what the group stored. `verified_at` is null until the bytes are known to
 * hash to `sha256`.
 */
export interface SandboxTable {
  sha256: string;
  owner_group: string;
  owner: string;
  size: number;
  created_at: string;
  verified_at: string | null;
}

export interface JobsTables {
  jobs: JobTable;
  job_status_history: JobStatusHistoryTable;
  job_parameters: JobParameterTable;
  jobs_secrets: JobsSecretTable;
  job_output_tails: JobOutputTailTable;
  job_counts: JobCountTable;
  job_count_deltas: JobCountDeltaTable;
  task_queues: TaskQueueTable;
  task_queue_deltas: TaskQueueDeltaTable;
  fair_share_usage: FairShareUsageTable;
  workflows: WorkflowTable;
  job_dependencies: JobDependencyTable;
  sandboxes: SandboxTable;
}

declare module '../kernel/db/schema.ts' {
  interface Database extends JobsTables {}
}
