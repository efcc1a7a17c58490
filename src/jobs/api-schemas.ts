/**
 * Shapes of the /jobs answers and of the bodies the handlers check by hand (manifests are checked by
 * manifest.ts, whose messages name the bad key; this schema tells clients and the document what it accepts).
 */
import { Type } from 'typebox';
import { Binary } from '../kernel/openapi.ts';
import { ALL_STATUSES, ATTRIBUTES, INTEGER_RANGES, type AttributeName, type JobStatus } from './model.ts';
import { MAX_LIST_ITEMS } from './manifest.ts';
import { MAX_EXIT_CODES, MAX_RETRY_DELAY } from './flow/retry-keys.ts';
import { MAX_SORT_KEYS, MAX_VALUES } from './search.ts';
import { OPERATORS, type Operator } from '../protocol/job-attributes.ts';
import type { JobsConfig } from './config-schema.ts';

// Type arrays rather than anyOf: the serializer checks them inline instead of validating each value.
const attributeSchema = (type: 'string' | 'integer') => Type.Unsafe<string | number | null>({ type: [type, 'null'] });
/** A type list, not anyOf: OpenAPI 3.0 generators (after down-conversion) read it as a nullable string. */
const cursorSchema = (description: string) => Type.Unsafe<string | null>({ type: ['string', 'null'], description });
const jobAttributes = Object.fromEntries((Object.keys(ATTRIBUTES) as AttributeName[]).map((k) => [k, attributeSchema(ATTRIBUTES[k].type)])) as Record<
  AttributeName,
  ReturnType<typeof attributeSchema>
>;

export const JobRecord = Type.Object(jobAttributes, { title: 'JobRecord' });

export const StatusHistory = Type.Array(
  Type.Object({ Status: Type.String(), MinorStatus: Type.String(), ApplicationStatus: Type.String(), StatusTime: Type.String(), Source: Type.String() }),
);

const PARAMETER_NAME = '^[A-Za-z0-9_.:-]{1,128}$';
const ParameterName = Type.String({ pattern: PARAMETER_NAME });
const JobParameters = Type.Record(ParameterName, Type.String({ maxLength: 4096 }), { additionalProperties: false, description: 'what the job reported about itself (POST /jobs/{jid}/report)' });

/** One object rather than an allOf, which several generators reduce to its first member. */
export const JobDescription = Type.Object(
  {
    ...jobAttributes,
    // Workflows (docs/workflows.md).
    Parents: Type.Array(Type.Object({ JobID: Type.Integer(), Status: Type.String() }), { description: 'the jobs it waits for (DependsOn), with their statuses' }),
    Children: Type.Array(Type.Integer(), { description: 'the jobs that wait for it' }),
    DependencyType: Type.Unsafe<string | null>({ type: ['string', 'null'], enum: ['afterok', 'afterany', 'afternotok', null], description: 'the condition on its parents; null without parents' }),
    MaxRetries: Type.Integer({ minimum: 0, description: 'automatic retries the manifest allows (0 by default)' }),
    WorkflowNode: Type.Unsafe<string | null>({ type: ['string', 'null'], description: 'its node within its workflow; null outside workflows' }),
    StatusHistory,
    Parameters: JobParameters,
  },
  { title: 'JobDescription' },
);

/** POST /jobs/{jid}/report: what a running job says about itself; every report is also a heartbeat. */
export const ReportBody = Type.Object(
  {
    ApplicationStatus: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: "what the application is doing ('step 2/5')" })),
    // Other names fail rather than vanish: the body check strips properties only where additionalProperties is false.
    Parameters: Type.Optional(
      Type.Unsafe<Record<string, string>>({
        type: 'object',
        patternProperties: { [PARAMETER_NAME]: { type: 'string', maxLength: 4096 } },
        additionalProperties: { not: {}, description: 'names are letters, digits and _ . : - (at most 128)' },
        maxProperties: 100,
        description: 'job parameters to set (key/value)',
      }),
    ),
  },
  { additionalProperties: false, title: 'JobReport' },
);

export const ReportReply = Type.Object({ jid: Type.Integer(), Status: Type.String({ description: 'the job status: a job told Killed should stop' }) }, { title: 'JobReportReply' });

export const JobList = Type.Object(
  {
    entries: Type.Integer({
      minimum: 0,
      description: 'how many jobs match in all: exact when entriesExact is true; otherwise at least this many (counted up to 10,000 when a restriction names an attribute other than Owner, OwnerGroup, Setup, Site, Status, JobGroup or JobType)',
    }),
    entriesExact: Type.Boolean({ description: 'whether entries is the exact number of matching jobs, or a lower bound' }),
    startJob: Type.Integer(),
    maxJobs: Type.Integer(),
    jobs: Type.Array(JobRecord),
    nextCursor: cursorSchema('pass as cursor to get the page after this one (same restrictions and sort); null on the last page'),
  },
  { title: 'JobList' },
);

export const Submitted = Type.Object({ jids: Type.Array(Type.Integer()) }, { title: 'Submitted' });

export const Killed = Type.Object({ jid: Type.Integer(), Status: Type.Literal('Killed') }, { title: 'Killed' });

/** POST /jobs/kill, /jobs/reschedule and /jobs/delete: the jobs to act on. */
export const JobIds = Type.Object(
  { jids: Type.Array(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), { minItems: 1, maxItems: 10000, description: 'job ids; each is answered on its own' }) },
  { additionalProperties: false, title: 'JobIds' },
);

export const ActionResults = Type.Object(
  {
    results: Type.Array(
      Type.Union([
        Type.Object({ jid: Type.Integer(), Status: Type.String({ description: 'the status the job now has' }) }, { additionalProperties: false }),
        Type.Object(
          { jid: Type.Integer(), error: Type.String(), error_description: Type.String() },
          { additionalProperties: false, description: 'this job was not acted on: the error its own request would have had (not_found, insufficient_privileges, invalid_transition, conflict)' },
        ),
      ]),
      { description: 'one per distinct job id, in the order given' },
    ),
  },
  { title: 'JobActionResults' },
);

export const JidParams = Type.Object({ jid: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'a job id (a positive integer)' }) });

/** A file name of the job's working directory (src/protocol/file-names.ts: no path separator, no '..', no control character). */
const FileName = (description: string) => Type.String({ minLength: 1, maxLength: 255, pattern: '^[^/\\\\]+$', description });

/** A list of exit codes (0…255), each meaningful once. */
const ExitCodes = (description: string) => Type.Array(Type.Integer({ minimum: 0, maximum: 255 }), { maxItems: MAX_EXIT_CODES, description });

/**
 * The manifest keys Dirigo reads (README "Jobs"), with the rules manifest.ts checks (its 400s name the bad
 * key; limits that depend on the configuration are given in words); any other key is kept as given.
 */
export const JobManifest = Type.Object(
  {
    Executable: Type.String({ minLength: 1, pattern: '\\S', description: 'program to run: a name on PATH, an absolute path, or a file of the input sandbox' }),
    Arguments: Type.Optional(Type.String({ description: 'split into words as a POSIX shell would, without expansion' })),
    Sites: Type.Optional(
      Type.Array(Type.String(), { minItems: 1, maxItems: MAX_LIST_ITEMS.Sites, description: `configured sites the job may run at (any when absent); at most ${MAX_LIST_ITEMS.Sites}, repeats count once` }),
    ),
    JobName: Type.Optional(Type.String({ maxLength: 256, description: 'each %j (the job id) counts as 19 characters' })),
    JobGroup: Type.Optional(Type.String({ maxLength: 256, description: 'each %j (the job id) counts as 19 characters' })),
    JobType: Type.Optional(Type.String({ maxLength: 64 })),
    InputSandbox: Type.Optional(
      Type.Array(Type.String(), {
        maxItems: MAX_LIST_ITEMS.InputSandbox,
        description: `names of files uploaded with the submission (at most ${MAX_LIST_ITEMS.InputSandbox}); the stored manifest lists the files the input sandbox holds`,
      }),
    ),
    InputSandboxRef: Type.Optional(
      Type.String({ pattern: '^sha256:[0-9a-f]{64}$', description: 'an input sandbox uploaded before (POST /sandboxes) by you or your group; InputSandbox then names its files. Not with uploaded files' }),
    ),
    OutputSandbox: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        maxItems: MAX_LIST_ITEMS.OutputSandbox,
        description: `files or glob patterns, relative to the working directory, returned in the output sandbox (at most ${MAX_LIST_ITEMS.OutputSandbox})`,
      }),
    ),
    StdOutput: Type.Optional(FileName("the file that receives standard output; default 'std.out'")),
    StdError: Type.Optional(FileName("the file that receives standard error, not StdOutput's; default 'std.err'")),
    Priority: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
    CPUTime: Type.Optional(Type.Integer({ minimum: 1, description: 'seconds, at most the configured jobs.maxCpuTime' })),
    Environment: Type.Optional(
      Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.String(), {
        additionalProperties: false,
        description: 'variables set for the job; with Arguments at most jobs.maxCommandBytes in all',
      }),
    ),
    Parameters: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1 }), Type.Array(Type.Union([Type.String(), Type.Number()]), { minItems: 1, maxItems: 1_000_000 })], {
        description:
          "a parametric job (DIRAC's semantics): one job per value, or this many jobs with ParameterStart/Step/Factor; %s, %(NAME)s, %n and %j in strings are the value, a named set's value (Parameters.NAME), the index and the job id; at most jobs.maxParametricJobs jobs (at most 1,000,000), whose manifests take at most jobs.maxSubmissionBytes once expanded (the manifest is checked as a template first)",
      }),
    ),
    ParameterStart: Type.Optional(Type.Number({ description: 'first value of a counted Parameters (default 1)' })),
    ParameterStep: Type.Optional(Type.Number({ description: 'added to each value to make the next (default 0)' })),
    ParameterFactor: Type.Optional(Type.Number({ description: 'each value is multiplied by it before the step is added (default 1)' })),
    // Workflows (docs/workflows.md), the submission's keys; flow/manifest-keys.ts checks them.
    DependsOn: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1 }), Type.String({ minLength: 1 }), Type.Array(Type.Union([Type.Integer({ minimum: 1 }), Type.String({ minLength: 1 })]), { minItems: 1, maxItems: 1000 })], {
        description: "the jobs it waits for: a job id, a list of job ids (in POST /workflows also node names), or Slurm's \"afterok:12:13\"; at most 1,000 jobs",
      }),
    ),
    DependencyType: Type.Optional(Type.Union([Type.Literal('afterok'), Type.Literal('afterany'), Type.Literal('afternotok')], { description: 'the condition on its parents (default afterok)' })),
    Hold: Type.Optional(Type.Boolean({ description: 'submitted held (HoldReason Held) until released' })),
    MaxRunning: Type.Optional(Type.Integer({ minimum: 1, maximum: 2147483647, description: "on a parametric manifest or in a workflow: how many of its jobs may be active at once (Slurm's %N)" })),
    NodeName: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,128}$', description: "POST /workflows only: the node's name (JobName when absent)" })),
    // What a run's end makes of the job (docs/workflows.md "When a run ends").
    MaxRetries: Type.Optional(Type.Integer({ minimum: 0, description: 'automatic retries of a failed run, at most jobs.workflows.maxRetries (default 0)' })),
    RetryExitCodes: Type.Optional(ExitCodes('exit codes whose runs are retried (absent: any non-zero code)')),
    SuccessExitCodes: Type.Optional(ExitCodes('exit codes that count as success besides 0: the job is Done')),
    OnExitHold: Type.Optional(ExitCodes("exit codes that hold the job (Received, HoldReason ExitCode) for a look instead of failing it; 'release' runs it again")),
    RetryDelay: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_RETRY_DELAY, description: 'seconds before the first retry (default jobs.workflows.retryDelay); doubles with each retry, at most jobs.workflows.maxRetryDelay' })),
    BanFailedSites: Type.Optional(Type.Boolean({ description: 'each retry adds the site that failed to BannedSites, unless that would leave no site' })),
  },
  { title: 'JobManifest', additionalProperties: true },
);

/** POST /jobs bodies, with the configured bounds. JSON first: generators make the first media type the method's main form. */
export const submissionBodies = (config: JobsConfig) => ({
  'application/json': Type.Union([JobManifest, Type.Array(JobManifest, { minItems: 1, maxItems: config.maxBulk, description: `all or nothing; at most jobs.maxBulk (${config.maxBulk}) manifests` })]),
  'text/x-jdl': Type.String({ description: "one manifest in DIRAC's JDL (ClassAd) syntax; attribute names in any case, Site and ExecutionEnvironment as DIRAC spells them" }),
  // The service reads every file part whatever its part name (curl -F 'x=@run.sh'), so more part names are
  // allowed; only `files` is declared, so that typed clients can give the named parts beside it.
  'multipart/form-data': Type.Object(
    {
      manifest: Type.Optional(
        Type.Array(Type.String({ contentMediaType: 'application/json', description: 'a manifest (JSON), one job per part' }), {
          maxItems: config.maxBulk,
          description: `manifest and jdl parts together: at most jobs.maxBulk (${config.maxBulk})`,
        }),
      ),
      jdl: Type.Optional(Type.Array(Type.String({ contentMediaType: 'text/x-jdl', description: 'a manifest as JDL, one job per part' }), { maxItems: config.maxBulk })),
      files: Type.Optional(
        Type.Array(Binary, {
          maxItems: config.sandbox.maxFiles,
          description: `input sandbox files, each part with its file name (Content-Disposition filename); parts of any other name are input files too; at most jobs.sandbox.maxFiles (${config.sandbox.maxFiles}) files of every part name`,
        }),
      ),
    },
    { description: "one job per 'manifest' or 'jdl' part; every file part (a part with a file name) joins the input sandbox of them all" },
  ),
});

/** The headers of a sandbox download (RFC 9110 §8.8.3 ETag, RFC 6266 Content-Disposition, RFC 9530 Repr-Digest). */
export const SandboxHeaders = {
  ETag: Type.String({ description: '"sha256-<hex>": send it back in If-None-Match' }),
  'Content-Disposition': Type.String({ description: 'attachment; filename="job-<jid>-<which>.tar.gz"' }),
  'Content-Length': Type.Integer(),
  'X-Content-SHA256': Type.String({ description: 'the SHA-256 of the archive, in hex' }),
  'Repr-Digest': Type.String({ description: 'sha-256=:<base64>:' }),
};

export const IfNoneMatch = Type.Object({ 'if-none-match': Type.Optional(Type.String({ description: 'the ETag of a copy the client has' })) });

/** One enum rather than a union of literals: documents (and generated clients) list the statuses as one set. */
const JobStatusName = Type.Unsafe<JobStatus>({ type: 'string', enum: [...ALL_STATUSES] });

const AttributeNameSchema = Type.Unsafe<AttributeName>({ type: 'string', enum: Object.keys(ATTRIBUTES), description: 'a job attribute' });
const SORT_PATTERN = `^-?(${Object.keys(ATTRIBUTES).join('|')})$`;

const restriction = (name: AttributeName) =>
  name === 'Status'
    ? Type.Array(JobStatusName, { maxItems: MAX_VALUES, description: `restrict to these statuses (repeat the key: OR; at most ${MAX_VALUES} values)` })
    : Type.Array(name in INTEGER_RANGES ? Type.Integer(INTEGER_RANGES[name as keyof typeof INTEGER_RANGES]) : Type.String(), {
        maxItems: MAX_VALUES,
        description: `restrict to these ${name} values (repeat the key: OR; at most ${MAX_VALUES} values)`,
      });

const restrictions = Object.fromEntries((Object.keys(ATTRIBUTES) as AttributeName[]).map((k) => [k, Type.Optional(restriction(k))]));

/**
 * GET /jobs: paging, and one optional restriction per job attribute. Validation is attached, not answered:
 * parseListQuery (routes.ts) reads the query itself and says what is wrong in the service's own words.
 */
export const ListQuery = Type.Object(
  {
    allOwners: Type.Optional(Type.Boolean({ default: false, description: 'true: every job the caller may see' })),
    maxJobs: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'an integer: how many jobs in the page, 1 to 1000 (GET /jobs/stream answers any number)' })),
    startJob: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0, description: 'an integer: how many jobs to skip (OFFSET: a deep page costs the rows it skips; prefer cursor)' })),
    cursor: Type.Optional(Type.String({ maxLength: 4096, description: "a previous answer's nextCursor: the page after it, at the same cost however deep (not with startJob)" })),
    sort: Type.Optional(
      Type.Array(Type.String({ pattern: SORT_PATTERN }), {
        maxItems: MAX_SORT_KEYS,
        description: `sort keys in order, an attribute name, with a leading - for descending (default -JobID: newest first); at most ${MAX_SORT_KEYS}, each attribute once`,
      }),
    ),
    ...restrictions,
  },
  { additionalProperties: true },
);

/** GET /jobs/stream: the query of GET /jobs, maxJobs unbounded (every matching job when not given). */
export const StreamQuery = Type.Object(
  {
    ...ListQuery.properties,
    maxJobs: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'an integer: how many jobs to answer at most (default: every matching job)' })),
  },
  { additionalProperties: true },
);

/** GET /jobs/events: the restrictions of GET /jobs, and where to resume. */
export const EventsQuery = Type.Object(
  {
    allOwners: Type.Optional(Type.Boolean({ default: false, description: 'true: every job the caller may see' })),
    lastEventId: Type.Optional(Type.String({ pattern: '^\\d+\\.\\d+$', description: 'resume after this event id (as the Last-Event-ID header)' })),
    ...restrictions,
  },
  { additionalProperties: true },
);

/** GET /jobs/summary: the attributes to group by, and the same restrictions as GET /jobs. */
export const SummaryQuery = Type.Object(
  {
    groupBy: Type.Array(AttributeNameSchema, { minItems: 1, maxItems: 4, uniqueItems: true, description: 'attributes to count per combination of (repeat the key; one to four, each once)' }),
    allOwners: Type.Optional(Type.Boolean({ default: false, description: 'true: every job the caller may see' })),
    ...restrictions,
  },
  { additionalProperties: true },
);

export const JobSummary = Type.Object(
  {
    total: Type.Integer({ minimum: 0, description: 'jobs counted, in every group (those left out of a truncated answer too)' }),
    truncated: Type.Boolean({ description: 'true when more combinations exist than jobs.maxSummaryGroups (default 10,000): summary holds the largest ones only' }),
    summary: Type.Array(Type.Object({ count: Type.Integer({ minimum: 1 }) }, { additionalProperties: Type.Union([Type.String(), Type.Integer(), Type.Null()]) }), {
      description: 'one entry per combination of the groupBy values present, largest count first (ties in the order of the values), at most jobs.maxSummaryGroups',
    }),
  },
  { title: 'JobSummary' },
);

// String first: the body check may turn a number into its text, never text into a number, and search.ts
// reads integer attributes' values back from their text. (anyOf, not a type array: OpenAPI 3.0 generators.)
const SearchValue = Type.Union([Type.String({ maxLength: 512 }), Type.Integer()]);

/** POST /jobs/search (DIRAC's job monitor selections; the shape of DiracX's search body). */
export const SearchBody = Type.Object(
  {
    search: Type.Optional(
      Type.Array(
        Type.Object(
          {
            parameter: AttributeNameSchema,
            operator: Type.Unsafe<Operator>({ type: 'string', enum: [...OPERATORS] }),
            value: Type.Optional(SearchValue),
            values: Type.Optional(Type.Array(SearchValue, { minItems: 1, maxItems: MAX_VALUES, description: `at most ${MAX_VALUES}; a repeated value counts once` })),
          },
          { additionalProperties: false, description: "'in' and 'not in' take values, the others value; times compare as ISO 8601; 'like' uses % and _" },
        ),
        { maxItems: 32, description: 'conditions, all of which a job meets (at most 32)' },
      ),
    ),
    parameters: Type.Optional(
      Type.Array(AttributeNameSchema, {
        minItems: 1,
        maxItems: Object.keys(ATTRIBUTES).length,
        uniqueItems: true,
        description: `attributes to return (default all), each once: at most ${Object.keys(ATTRIBUTES).length}`,
      }),
    ),
    sort: Type.Optional(
      Type.Array(Type.Object({ parameter: AttributeNameSchema, direction: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])) }, { additionalProperties: false }), {
        maxItems: MAX_SORT_KEYS,
        description: `sort keys in order (default: JobID descending), at most ${MAX_SORT_KEYS}, each attribute once; JobID is always the last key`,
      }),
    ),
    page: Type.Optional(
      Type.Object(
        {
          size: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
          offset: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
          cursor: Type.Optional(Type.String({ maxLength: 4096, description: 'nextCursor of the previous page: the page after it, at any depth for the same cost' })),
        },
        { additionalProperties: false },
      ),
    ),
    allOwners: Type.Optional(Type.Boolean({ default: false, description: 'true: every job the caller may see' })),
  },
  { additionalProperties: false, title: 'JobSearch' },
);

export const SearchAnswer = Type.Object(
  {
    jobs: Type.Array(Type.Partial(Type.Object(jobAttributes)), { description: 'the asked attributes of each job' }),
    nextCursor: cursorSchema('continues after the last job; null on the last page'),
  },
  { title: 'JobSearchPage' },
);
