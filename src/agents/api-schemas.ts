/**
 * Shapes of the /agents bodies and answers: what `dirigo agent` sends and reads (agent.ts), and what the
 * OpenAPI document shows of the pull protocol.
 */
import type { Readable } from 'node:stream';
import { PresignedDownload } from '../jobs/index.ts';
import { Type } from 'typebox';
import { Binary } from '../kernel/openapi.ts';
import { PLATFORM_PATTERN, REQUIREMENT_LIMITS, TAG_PATTERN } from '../protocol/requirements.ts';

const AgentId = Type.String({ pattern: '^[A-Za-z0-9_.-]{1,40}$', description: 'the agent process, chosen by the agent' });
// Bounded as the jobs' own ids are (JidParams): a larger number passes the integer check but not PostgreSQL's bigint (a 500).
const JobId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const ApplicationStatus = Type.String({ maxLength: 500, description: "what the application says it is doing (the job's ApplicationStatus)" });

export const MatchBody = Type.Object(
  {
    agentId: AgentId,
    site: Type.String({ minLength: 1, maxLength: 64, description: 'a configured site of type agents' }),
    slots: Type.Integer({ minimum: 1, maximum: 1000, description: 'how many jobs the agent can take now' }),
    // What the node has free now (docs/matching.md); each optional, so that an older agent still matches.
    resource: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,128}$', description: "the agent's resource (its node), for matching explanations; its agentId when absent" })),
    cores: Type.Optional(Type.Integer({ minimum: 0, maximum: REQUIREMENT_LIMITS.processors, description: 'processors free now, shared by the jobs taken; slots when absent' })),
    memoryMb: Type.Optional(Type.Integer({ minimum: 0, maximum: REQUIREMENT_LIMITS.maxRamMb, description: 'memory free now in MB, shared by the jobs taken (their MaxRAM); no limit when absent' })),
    gpus: Type.Optional(Type.Integer({ minimum: 0, maximum: REQUIREMENT_LIMITS.gpus, description: 'GPUs free now; none when absent' })),
    tags: Type.Optional(Type.Array(Type.String({ pattern: TAG_PATTERN.source }), { maxItems: REQUIREMENT_LIMITS.tags, description: 'tags the node offers (Tags)' })),
    platform: Type.Optional(Type.String({ pattern: PLATFORM_PATTERN.source, description: "the node's platform (Linux_x86_64_glibc-2.36); unknown when absent: only jobs naming none match" })),
    cpuTime: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1, description: 'seconds the agent may still run a job (CPUTime); no limit when absent' })),
  },
  { additionalProperties: false },
);

/** A matched job: the stored manifest (any key the submitter gave is kept, hence open) and its argument vector. */
const MatchedJob = Type.Object({
  JobID: JobId,
  Manifest: Type.Object({}, { additionalProperties: true, description: 'the manifest as stored (GET /jobs/{jid}/manifest)' }),
  Argv: Type.Array(Type.String(), { description: 'Arguments split into words' }),
  InputSandbox: Type.Boolean({ description: 'true: fetch it from /agents/jobs/{jid}/inputsandbox' }),
  RescheduleCounter: Type.Integer({ minimum: 0 }),
  JobToken: Type.String({ description: "the job's own token, for its reports (DIRIGO_JOB_TOKEN in the payload's environment)" }),
  Processors: Type.Integer({ minimum: 1, description: 'processors the job was given, out of the cores offered (DIRIGO_NUMBER_OF_PROCESSORS)' }),
});

const HeartbeatInterval = Type.Integer({ minimum: 1, description: 'milliseconds until the next heartbeat is due' });

/** A command for the pilot (docs/pilots.md), present while one is pending. */
const PilotCommand = Type.Optional(
  Type.Union([Type.Literal('drain'), Type.Literal('stop')], { description: 'drain: take no new job, finish the running ones, then end; stop: give the running jobs back (rescheduled) and end' }),
);

export const MatchReply = Type.Object({ jobs: Type.Array(MatchedJob, { description: 'empty when no job waits, or a command is pending' }), heartbeatIntervalMs: HeartbeatInterval, command: PilotCommand });

export const HeartbeatBody = Type.Object(
  {
    agentId: AgentId,
    jobs: Type.Array(JobId, { maxItems: 10000, description: 'the jobs the agent runs' }),
    outputs: Type.Optional(
      Type.Array(
        Type.Object(
          { jid: JobId, tail: Type.String({ maxLength: 1024 * 1024, description: 'the end of its StdOutput (at most jobs.peekBytes are kept)' }), size: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: "StdOutput's whole size" }) },
          { additionalProperties: false },
        ),
        { maxItems: 1000, description: 'what its running jobs wrote lately, for GET /jobs/{jid}/peek' },
      ),
    ),
  },
  { additionalProperties: false },
);

export const HeartbeatReply = Type.Object({ kill: Type.Array(JobId, { description: 'jobs the agent must stop: killed, or no longer its own' }), heartbeatIntervalMs: HeartbeatInterval, command: PilotCommand });

export const StatusBody = Type.Object(
  {
    agentId: AgentId,
    status: Type.Union([Type.Literal('Running'), Type.Literal('Completing')]),
    applicationStatus: Type.Optional(ApplicationStatus),
  },
  { additionalProperties: false },
);

/** What the payload consumed, as the agent measured it (docs/accounting.md); a day of a thousand cores at most. */
export const RunUsageBody = Type.Object(
  {
    cpuUserSeconds: Type.Number({ minimum: 0, maximum: 1e8, description: 'CPU seconds in user mode of the payload and its waited-for descendants' }),
    cpuSystemSeconds: Type.Number({ minimum: 0, maximum: 1e8, description: 'CPU seconds in kernel mode, likewise' }),
    maxRssKb: Type.Optional(Type.Integer({ minimum: 0, maximum: 1e12, description: 'largest resident set of one of its processes, kB' })),
  },
  { additionalProperties: false },
);

export const FinishBody = Type.Object(
  {
    agentId: AgentId,
    /** `rescheduled`: the agent is going away and gives the job back (it returns to Waiting). */
    outcome: Type.Union([Type.Literal('done'), Type.Literal('failed'), Type.Literal('rescheduled')], {
      description: 'rescheduled: the agent gives the job back, and it waits again (within jobs.scheduler.maxReschedules)',
    }),
    exitCode: Type.Union([Type.Integer({ minimum: -1000, maximum: 1000 }), Type.Null()]),
    minorStatus: Type.String({ minLength: 1, maxLength: 500 }),
    applicationStatus: Type.Optional(ApplicationStatus),
    /** Absent from older agents' reports: the record's CPU is then unknown. */
    usage: Type.Optional(RunUsageBody),
  },
  { additionalProperties: false },
);

/** The status the job has after the report: Waiting when a rescheduled job was given back. */
export const StatusReply = Type.Object({ JobID: JobId, Status: Type.String() });

/** Additional keys allowed: the access token may come in the query (RFC 6750 §2.3). */
export const AgentQuery = Type.Object({ agentId: AgentId }, { additionalProperties: true });

/** The input sandbox's query: `via=api` asks for the bytes through the API where the store would redirect. */
export const AgentSandboxQuery = Type.Object(
  { agentId: AgentId, via: Type.Optional(Type.Literal('api', { description: 'api: the bytes through the API rather than a redirect to the store' })) },
  { additionalProperties: true },
);

/** An output sandbox the agent sends straight to the store: announced, then recorded once uploaded. */
export const OutputSandboxRef = Type.Object({
  agentId: AgentId,
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the tar.gz' }),
  size: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'bytes' }),
});

export const Uploaded = Type.Object({ sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }), size: Type.Integer({ minimum: 0, description: 'bytes' }) });

/** The output sandbox is sent as the raw archive, under either media type. */
export const UploadBodies = { 'application/gzip': Binary, 'application/octet-stream': Binary };

/**
 * The input sandbox as the handler answers it: the stored archive's stream, which Fastify sends as it is,
 * never serialized, or (S3 store, Accept: application/json) the presigned URL as a JSON object, which is
 * serialized by this schema (a string-only schema made it "[object Object]"). Its document is
 * InputSandboxAnswer's.
 */
export const InputSandboxStream = Type.Union([Type.Unsafe<Readable>({ type: 'string', contentMediaType: 'application/gzip' }), PresignedDownload]);

export const InputSandboxAnswer = {
  description: 'The input sandbox: the tar.gz, or (S3 store, Accept: application/json) a presigned URL of it',
  content: { 'application/gzip': Binary, 'application/json': PresignedDownload },
  // RFC 9111 §5.2.2.5: a job's user data, which no intermediary should keep.
  headers: { 'Cache-Control': Type.Literal('no-store'), ETag: Type.String({ description: '"sha256-<hex>": send it back in If-None-Match' }) },
};
