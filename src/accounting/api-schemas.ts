/** The /accounting answers and queries (docs/accounting.md "API"): usage, the records, the queue's history. */
import { Type } from 'typebox';

const instant = (description: string) => Type.String({ maxLength: 40, description: `ISO 8601 date-time; ${description}` });
const values = (attribute: string) => Type.String({ maxLength: 4096, description: `only runs whose ${attribute} is this value, or one of these comma-separated values` });
const Format = Type.Union([Type.Literal('json'), Type.Literal('csv')], { description: 'json (the default) or csv; `Accept: text/csv` also asks for CSV' });

/** The job API's attribute names usage is grouped and filtered by. */
export const UsageAttribute = Type.Union([Type.Literal('Owner'), Type.Literal('OwnerGroup'), Type.Literal('Site'), Type.Literal('JobType'), Type.Literal('Status')]);
export const QueueAttribute = Type.Union([Type.Literal('Status'), Type.Literal('OwnerGroup'), Type.Literal('Site')]);

const usageFilters = {
  Owner: Type.Optional(values('Owner')),
  OwnerGroup: Type.Optional(values('OwnerGroup')),
  Site: Type.Optional(values('Site')),
  JobType: Type.Optional(values('JobType')),
  Status: Type.Optional(values('final Status (Done, Failed, Killed, Rescheduled)')),
  allOwners: Type.Optional(Type.Boolean({ description: "everyone's runs the caller may see (JobAdministrator, JobMonitor: all; JobSharing: the group's); without it, the caller's own" })),
};

export const UsageQuery = Type.Object({
  from: Type.Optional(instant('runs that ended at or after it, rounded down to the hour (default: 30 days before `to`)')),
  to: Type.Optional(instant('runs that ended before it, rounded up to the hour (default: now)')),
  interval: Type.Optional(
    Type.Union([Type.Literal('hour'), Type.Literal('day'), Type.Literal('week'), Type.Literal('month'), Type.Literal('total')], {
      description: 'UTC buckets: hours, days, ISO weeks (from Monday), calendar months, or the whole range (default: the finest of hour, day, week with at most 1000 buckets)',
    }),
  ),
  groupBy: Type.Optional(UsageAttribute),
  ...usageFilters,
  format: Type.Optional(Format),
});

const hours = (what: string) => Type.Number({ description: `${what}, in hours` });

export const UsageRow = Type.Object(
  {
    Time: Type.String({ description: "the bucket's start (ISO 8601, UTC); the range's start for `total`" }),
    Group: Type.Union([Type.String(), Type.Null()], { description: "the groupBy attribute's value; null without groupBy" }),
    Jobs: Type.Integer({ description: 'runs that ended in the bucket' }),
    WallHours: hours('wall-clock time'),
    CoreHours: hours('wall-clock time × processors'),
    CPUHours: hours('CPU time, user + system, of the runs whose CPU was measured'),
    CPUEfficiency: Type.Union([Type.Number(), Type.Null()], { description: 'CPU time / (wall × processors) of the runs whose CPU was measured; null when none was' }),
  },
  { additionalProperties: false, title: 'AccountingUsageRow' },
);

export const UsageAnswer = Type.Object(
  {
    from: Type.String({ description: 'the range used (rounded to hours)' }),
    to: Type.String(),
    interval: Type.String(),
    groupBy: Type.Union([UsageAttribute, Type.Null()]),
    rows: Type.Array(UsageRow, { description: 'oldest bucket first, groups in name order; buckets without runs are left out' }),
  },
  { additionalProperties: false, title: 'AccountingUsage' },
);

export const RecordsQuery = Type.Object({
  from: Type.Optional(instant('runs that ended at or after it (default: any time)')),
  to: Type.Optional(instant('runs that ended before it (default: any time)')),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'at most this many records (default 100)' })),
  before: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'records older than this RecordID: the `next` of the previous page' })),
  ...usageFilters,
  format: Type.Optional(Format),
});

export const UsageRecord = Type.Object(
  {
    RecordID: Type.Integer(),
    JobID: Type.Integer(),
    Run: Type.Integer({ description: "the run's number: 1 for the job's first, + 1 for each reschedule or retry" }),
    Owner: Type.String(),
    OwnerGroup: Type.String(),
    Site: Type.String(),
    Resource: Type.String({ description: "a Slurm partition, an agent's resource or pilot reference; '' on a local site" }),
    JobType: Type.String(),
    StartTime: Type.Union([Type.String(), Type.Null()], { description: 'when the payload started; null when it never did' }),
    EndTime: Type.String(),
    WallSeconds: Type.Number(),
    CPUUserSeconds: Type.Union([Type.Number(), Type.Null()], { description: 'null when nobody measured it' }),
    CPUSystemSeconds: Type.Union([Type.Number(), Type.Null()]),
    MaxRSSKB: Type.Union([Type.Number(), Type.Null()], { description: 'largest resident set, kB; null where not measurable' }),
    Processors: Type.Integer(),
    Status: Type.String({ description: 'the status the run ended in: Done, Failed, Killed or Rescheduled' }),
    ExitCode: Type.Union([Type.Integer(), Type.Null()]),
  },
  { additionalProperties: false, title: 'AccountingRecord' },
);

export const RecordsAnswer = Type.Object(
  {
    records: Type.Array(UsageRecord, { description: 'newest first' }),
    next: Type.Union([Type.Integer(), Type.Null()], { description: 'the `before` of the next page; null on the last' }),
  },
  { additionalProperties: false, title: 'AccountingRecords' },
);

export const QueueQuery = Type.Object({
  from: Type.Optional(instant('buckets from it (default: a day before `to`)')),
  to: Type.Optional(instant('buckets before it (default: now)')),
  interval: Type.Optional(Type.Union([Type.Literal('minute'), Type.Literal('hour'), Type.Literal('day')], { description: 'the default is the finest still kept for `from`' })),
  groupBy: Type.Optional(QueueAttribute),
  Status: Type.Optional(values('Status')),
  OwnerGroup: Type.Optional(values('OwnerGroup')),
  Site: Type.Optional(values('Site')),
  format: Type.Optional(Format),
});

export const QueueRow = Type.Object(
  {
    Time: Type.String({ description: "the bucket's start (ISO 8601, UTC)" }),
    Group: Type.Union([Type.String(), Type.Null()], { description: "the groupBy attribute's value; null without groupBy" }),
    Jobs: Type.Number({ description: 'the mean number of jobs over the samples of the bucket' }),
  },
  { additionalProperties: false, title: 'AccountingQueueRow' },
);

export const QueueAnswer = Type.Object(
  {
    from: Type.String(),
    to: Type.String(),
    interval: Type.Union([Type.Literal('minute'), Type.Literal('hour'), Type.Literal('day')]),
    groupBy: Type.Union([QueueAttribute, Type.Null()]),
    rows: Type.Array(QueueRow, { description: 'oldest bucket first; buckets without samples are left out' }),
  },
  { additionalProperties: false, title: 'AccountingQueue' },
);

export const ApelQuery = Type.Object({
  month: Type.String({ pattern: '^[0-9]{4}-(0[1-9]|1[0-2])$', description: 'the month, YYYY-MM (UTC)' }),
});
