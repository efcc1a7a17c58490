/**
 * A site run by Slurm (`type: slurm` in `jobs.sites`): jobs are handed to `sbatch`, followed with one
 * batched `squeue` per cycle and killed with `scancel`. The staging directory must be visible at the same
 * path on the Dirigo host and on every compute node (NFS, Lustre, CephFS...).
 */
import { Type, type Static } from 'typebox';
import { RunningLimitsSchema } from '../protocol/running-limits.ts';
import { ResourcePlatform, ResourceTags } from '../payload/local-site-schema.ts';

export const SlurmSiteSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
    type: Type.Literal('slurm'),
    /**
     * The partitions jobs may go to, comma-separated, in the order they are offered; Slurm's default
     * partition when absent. Each is a resource of its own: a job goes to one that fits it (docs/matching.md).
     */
    partition: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.,-]{1,128}$' })),
    /** How often the partitions' CPUs, memory, GPUs and time limits are read again (`sinfo`). */
    partitionRefreshMs: Type.Integer({ minimum: 1000, default: 180000 }),
    /** Tags its nodes offer jobs (Slurm does not say). */
    tags: ResourceTags,
    /** Its nodes' platform (Slurm does not say); this host's when absent. */
    platform: ResourcePlatform,
    /** `--account`. */
    account: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,128}$' })),
    /** Extra `sbatch` options, one argument each (e.g. `["--qos=normal", "--mem=2G"]`). */
    sbatchOptions: Type.Array(Type.String({ pattern: '^-', maxLength: 256 }), { default: [] }),
    /**
     * Where the batch script gets the input sandbox: `staging`, a copy the service writes in the staging
     * directory; `store`, a download on the compute node from a presigned GET of the sandbox store (curl,
     * the URL good for jobs.sandbox.stagePresignTtlSeconds), checked against its sha256 (sha256sum).
     */
    stageInputFrom: Type.Union([Type.Literal('staging'), Type.Literal('store')], { default: 'staging' }),
    /** Shared staging directory (relative to the data dir): job scripts, input archives, working dirs. */
    stagingDir: Type.String({ default: 'slurm-staging' }),
    /** Most jobs this instance keeps in Slurm at once (queued or running). */
    maxJobs: Type.Integer({ minimum: 1, maximum: 1000000, default: 1000 }),
    /** Alternative slurm.conf for this site (`SLURM_CONF`), e.g. to reach another cluster. */
    slurmConf: Type.Optional(Type.String()),
    /** Folder holding sbatch, squeue and scancel; PATH when absent. */
    binDir: Type.Optional(Type.String()),
    /** Longest time one Slurm command may take. */
    commandTimeoutMs: Type.Integer({ minimum: 100, default: 30000 }),
    /** First pause after a failed `sbatch` before matching for this site again (doubles up to 60 s). */
    retryDelayMs: Type.Integer({ minimum: 10, default: 2000 }),
    /** Keep staging directories after the job ends (debugging). */
    keepStaging: Type.Boolean({ default: false }),
    /** Most jobs of an attribute's value held here at once (matching: docs/matching.md). */
    runningLimits: RunningLimitsSchema,
  },
  { additionalProperties: false },
);

export type SlurmSiteConfig = Static<typeof SlurmSiteSchema>;
