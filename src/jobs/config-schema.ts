/**
 * The `jobs` section of the configuration: submission limits, the sandbox store, the scheduler and the
 * sites jobs run on. Every key has a default so the embedded default needs nothing here.
 */
import { Type, type Static } from 'typebox';
import { SlurmSiteSchema } from './slurm-site-schema.ts';
import { AgentSiteSchema } from './agent-site-schema.ts';
import { LocalSiteSchema } from '../payload/local-site-schema.ts';

const MiB = 1024 * 1024;

/** SigV4 presigned URLs are good for a week at most. */
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;

/** `jobs.sandbox.s3`: the bucket of the S3 store (any S3-compatible service). */
const S3StoreSchema = Type.Object(
  {
    /** Required with `store: s3`. */
    bucket: Type.Optional(Type.String({ minLength: 3, maxLength: 63, pattern: '^[a-z0-9][a-z0-9.-]+[a-z0-9]$' })),
    /** The service's URL (`https://s3.example.org`); absent: AWS, for `region`. */
    endpoint: Type.Optional(Type.String({ pattern: '^https?://[^/?#\\s]+/?$' })),
    region: Type.String({ minLength: 1, default: 'us-east-1' }),
    /** Path-style URLs (`<endpoint>/<bucket>/<key>`: MinIO, Ceph, moto); false: virtual-host style (`<bucket>.<host>`). */
    forcePathStyle: Type.Boolean({ default: false }),
    /** Put before every object's name (`<prefix><sha256>.tar.gz`), e.g. `sandboxes/`. */
    prefix: Type.String({ pattern: '^[^\\s]*$', default: '' }),
    /** With secretAccessKey; both absent: the SDK's standard chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE…). */
    accessKeyId: Type.Optional(Type.String({ minLength: 1 })),
    /** Kept in clear here, like every credential of config.yaml: protect the file (never logged). */
    secretAccessKey: Type.Optional(Type.String({ minLength: 1 })),
    sessionToken: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false, default: {} },
);

export const JobsConfigSchema = Type.Object(
  {
    /** Largest JSON body of POST /jobs (a manifest or an array of them). */
    jsonBodyLimit: Type.Integer({ minimum: 1024, default: 4 * MiB }),
    /**
     * Bytes a job's Arguments and Environment may take when it starts, counted as exec counts them; the
     * kernel refuses more than about 2 MiB (ARG_MAX) with the server's own environment included.
     */
    maxCommandBytes: Type.Integer({ minimum: 4096, maximum: 2 * MiB, default: MiB }),
    /** Largest CPUTime a manifest may ask for, in seconds (a year by default). */
    maxCpuTime: Type.Integer({ minimum: 1, default: 31_536_000 }),
    /** Most manifests in one submission (JSON array or multipart). */
    maxBulk: Type.Integer({ minimum: 1, maximum: 100000, default: 1000 }),
    /** Most bytes GET /jobs/{jid}/peek returns (and pull agents send with a heartbeat, per job). */
    peekBytes: Type.Integer({ minimum: 1024, maximum: 1024 * 1024, default: 65536 }),
    /** GET /jobs/events, the live events stream. */
    events: Type.Object(
      {
        /** Longest pause between two reads of new changes (changes made by this instance are sent at once). */
        pollMs: Type.Integer({ minimum: 10, maximum: 60_000, default: 250 }),
        /** A comment line this often keeps idle streams open through proxies. */
        heartbeatMs: Type.Integer({ minimum: 100, default: 15_000 }),
        /** How far back a client that reconnects with Last-Event-ID is sent what it missed. */
        replayWindowMs: Type.Integer({ minimum: 1000, default: 3600_000 }),
        /** Most events replayed; beyond, the client is told to list again (event `reset`). A replay reads at most this many + 1 rows of each table. */
        maxReplay: Type.Integer({ minimum: 1, default: 10_000 }),
        /** Most open streams per instance (503 with Retry-After beyond: the instance is busy, another may not be). */
        maxSubscribers: Type.Integer({ minimum: 1, default: 500 }),
        /** Most open streams of one user on one instance (429 with Retry-After beyond): a few windows and scripts. */
        maxStreamsPerUser: Type.Integer({ minimum: 1, default: 8 }),
        /** How often each open stream's access token is checked again (revocation, group membership); it also ends at the token's expiry exactly. */
        tokenRecheckMs: Type.Integer({ minimum: 100, maximum: 60_000, default: 2000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    /**
     * What one job may store through its reports (POST /jobs/{jid}/report), over all its runs: DIRAC jobs set
     * a few dozen parameters and change their ApplicationStatus a few times a step. Beyond a limit the report
     * is refused (409) and nothing of it is stored; bare heartbeats are always taken.
     */
    reports: Type.Object(
      {
        /** Most distinct parameters a job may have. */
        maxParameters: Type.Integer({ minimum: 1, default: 1000 }),
        /** Most bytes a job's parameters may take in all (names and values, in UTF-8). */
        maxParameterBytes: Type.Integer({ minimum: 1, default: MiB }),
        /** Most ApplicationStatus changes a job may report (each one is a status history entry). */
        maxStatusReports: Type.Integer({ minimum: 1, default: 10_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** How long a Deleted job keeps its sandboxes before they are purged (the job's row and history stay). */
    deletedRetentionMs: Type.Integer({ minimum: 1000, default: 7 * 24 * 3600_000 }),
    /** Most jobs one submission may create once parametric manifests are expanded (DIRAC-style `Parameters`). */
    maxParametricJobs: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 10_000 }),
    /**
     * Most bytes the jobs made by the parametric manifests of one submission may take, their manifests as
     * JSON once expanded: measured before any copy is made (10,000 jobs of 3 kB by default).
     */
    maxSubmissionBytes: Type.Integer({ minimum: 1024, default: 32 * MiB }),
    /** Most groups GET /jobs/summary answers, the largest; it says `truncated` when there were more. */
    maxSummaryGroups: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 10_000 }),
    sandbox: Type.Object(
      {
        /** Where sandboxes are kept (docs/sandboxes.md): `file`, the folder `dir`; `s3`, the bucket of `s3`. */
        store: Type.Union([Type.Literal('file'), Type.Literal('s3')], { default: 'file' }),
        /** Content-addressed store (relative to the data dir); with `store: s3`, only its `tmp/` (uploads on their way). */
        dir: Type.String({ default: 'sandboxes' }),
        s3: S3StoreSchema,
        /** How long a presigned URL (upload or download) is good for, in seconds. */
        presignTtlSeconds: Type.Integer({ minimum: 1, maximum: MAX_PRESIGN_SECONDS, default: 900 }),
        /** How long the presigned download a Slurm batch script stages its input from is good for (it may wait in the queue). */
        stagePresignTtlSeconds: Type.Integer({ minimum: 60, maximum: MAX_PRESIGN_SECONDS, default: 86_400 }),
        /** Bytes of live sandboxes one user may have; 0: no quota. */
        quotaBytes: Type.Integer({ minimum: 0, default: 0 }),
        /** An upload no job points at is removed after this long. */
        unreferencedRetentionMs: Type.Integer({ minimum: 1000, default: 24 * 3600_000 }),
        maxFileSize: Type.Integer({ minimum: 1, default: 100 * MiB }),
        maxSandboxSize: Type.Integer({ minimum: 1, default: 100 * MiB }),
        maxFiles: Type.Integer({ minimum: 1, default: 1000 }),
        /**
         * Longest a finished job's output sandbox may take to pack; past it the job fails with "Output
         * packing timed out" and its slot is free again (a payload can leave a huge sparse file).
         */
        outputPackTimeoutMs: Type.Integer({ minimum: 1000, default: 600_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    scheduler: Type.Object(
      {
        /** Longest pause between two matching cycles; submissions and job ends wake it earlier. */
        pollIntervalMs: Type.Integer({ minimum: 10, default: 1000 }),
        /** SIGTERM, then SIGKILL after this grace period. */
        killGraceMs: Type.Integer({ minimum: 0, default: 10000 }),
        /** A Matched/Running job whose lease is not renewed for this long is recovered. */
        leaseMs: Type.Integer({ minimum: 1000, default: 60000 }),
        /** How often CPU time is measured against CPUTime. */
        cpuCheckIntervalMs: Type.Integer({ minimum: 50, default: 1000 }),
        /**
         * How long after a dead holder's lease ran out another instance still leaves the holder's local (or
         * unreachable Slurm) runs to the holder's successor (a restart on its host with its data directory),
         * the only one that can tell whether they ended; only then are they run again.
         */
        adoptionGraceMs: Type.Integer({ minimum: 0, default: 300_000 }),
        /** Times a job lost by a dead executor is put back to Waiting before it is Failed. */
        maxReschedules: Type.Integer({ minimum: 0, default: 3 }),
        /** Disable to run an API-only instance. */
        enabled: Type.Boolean({ default: true }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** Fair share between groups and their users (docs/matching.md). */
    fairShare: Type.Object(
      {
        /** Each group's share; a group not named has 1. Inside a group, users share equally. */
        shares: Type.Record(Type.String({ minLength: 1, maxLength: 64 }), Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 }), { default: {} }),
        /** Past usage counts half after this long (exponential decay). */
        halfLifeMs: Type.Integer({ minimum: 1000, default: 24 * 3600_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** Dependencies, retries, holds and throttled sets (docs/workflows.md). */
    workflows: Type.Object(
      {
        /** The most MaxRetries a manifest may ask for. */
        maxRetries: Type.Integer({ minimum: 0, maximum: 1000, default: 10 }),
        /** Seconds before a first retry when the manifest says nothing (RetryDelay); doubles with each retry. */
        retryDelay: Type.Integer({ minimum: 0, maximum: 3600, default: 60 }),
        /** The longest back-off before a retry, seconds. */
        maxRetryDelay: Type.Integer({ minimum: 0, maximum: 86400, default: 3600 }),
        /** How often each instance's gatekeeper looks at the jobs that may not wait yet. */
        gatePassMs: Type.Integer({ minimum: 50, maximum: 60_000, default: 1000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    sites: Type.Array(Type.Union([LocalSiteSchema, SlurmSiteSchema, AgentSiteSchema]), { minItems: 1, default: [{ name: 'Local', type: 'local' }] }),
  },
  { additionalProperties: false, default: {} },
);

export type JobsConfig = Static<typeof JobsConfigSchema>;

declare module '../kernel/config.ts' {
  interface AppConfig {
    jobs: JobsConfig;
  }
}
