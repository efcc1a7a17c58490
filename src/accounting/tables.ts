/** The accounting domain's tables (docs/accounting.md): usage records, their hourly rollups and the queue's history. */
import type { Generated } from 'kysely';

/** One run of a job: from its claim to its end, with what it consumed. Written once, with the change that ended the run. */
export interface UsageRecordTable {
  id: Generated<number>;
  job_id: number;
  /** 1 for a job's first run; each reschedule or retry starts the next. */
  run: number;
  owner: string;
  owner_group: string;
  site: string;
  /** A Slurm partition, an agent's resource or pilot reference; '' on a local site. */
  resource: string;
  job_type: string;
  /** When the payload started; null when it never did. */
  start_time: string | null;
  end_time: string;
  /** end_time in whole hours since the epoch: the rollups' key. */
  end_hour: number;
  wall_seconds: number;
  /** Null when nobody measured the run (a kill, a lost run, a record from before accounting). */
  cpu_user_seconds: number | null;
  cpu_system_seconds: number | null;
  max_rss_kb: number | null;
  processors: number;
  /** The status the run ended in: Done, Failed, Killed or Rescheduled. */
  status: string;
  exit_code: number | null;
}

/** Records not yet folded into usage_hourly (appended with each record, deleted by the fold). */
export interface UsagePendingTable {
  record_id: number;
}

/** Sums of records per hour and grouping set (docs/accounting.md "Rollups"). */
export interface UsageHourlyTable {
  /** The dimensions grouped by, comma-separated in DIMENSIONS order; '' for the total. */
  grouping_set: string;
  hour: number;
  /** The first dimension's value ('' when the set has none). */
  a: string;
  /** The second dimension's value ('' when the set has fewer than two). */
  b: string;
  jobs: number;
  wall_seconds: number;
  /** wall × processors. */
  core_seconds: number;
  /** user + system, of the records whose CPU is known. */
  cpu_seconds: number;
  /** wall × processors of the records whose CPU is known: CPU efficiency's denominator. */
  cpu_core_seconds: number;
}

/** Jobs per status, group and site, summed over the samples taken in a bucket (docs/accounting.md "Queue history"). */
export interface QueueHistoryTable {
  /** `minute`, `hour` or `day`. */
  resolution: string;
  /** The bucket's start, seconds since the epoch. */
  time: number;
  status: string;
  owner_group: string;
  site: string;
  /** Sum of the counts sampled in the bucket; divided by the bucket's samples, the mean. */
  jobs: number;
}

/** How many samples each bucket holds (a key absent from a sample counted zero in it). */
export interface QueueHistorySamplesTable {
  resolution: string;
  time: number;
  samples: number;
}

export interface AccountingTables {
  usage_records: UsageRecordTable;
  usage_pending: UsagePendingTable;
  usage_hourly: UsageHourlyTable;
  queue_history: QueueHistoryTable;
  queue_history_samples: QueueHistorySamplesTable;
}

declare module '../kernel/db/schema.ts' {
  interface Database extends AccountingTables {}
}
