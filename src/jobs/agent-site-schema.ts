/**
 * A site served by pull-mode agents (`type: agents` in `jobs.sites`): `dirigo agent --site NAME` on worker
 * nodes asks `POST /agents/match` for work. No server-side executor runs these jobs; the service only
 * watches the agents' heartbeats.
 */
import { Type, type Static } from 'typebox';
import { RunningLimitsSchema } from '../protocol/running-limits.ts';

/**
 * A pilot factory for the site (docs/pilots.md): the service submits pilot batch jobs, each running
 * `dirigo agent` with a secret of its own, while Waiting jobs match what a pilot would offer. Slurm today;
 * `type` leaves room for HTCondor-CE and ARC REST.
 */
export const PilotFactorySchema = Type.Object(
  {
    type: Type.Literal('slurm'),
    /** The user whose rights factory pilots act with (a user of a group with the Pilot property). */
    owner: Type.String({ minLength: 1, maxLength: 255 }),
    /** The partitions pilots go to, comma-separated, each a resource of its own; Slurm's default when absent. */
    partition: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.,-]{1,128}$' })),
    /** Most pilots queued (Submitted or Waiting) at once, per partition. */
    maxWaiting: Type.Integer({ minimum: 0, maximum: 10000, default: 2 }),
    /** Most pilots not ended (queued or running) at once, per partition. */
    maxPilots: Type.Integer({ minimum: 0, maximum: 100000, default: 10 }),
    /** Jobs one pilot runs at once (`--slots`; its `--cpus-per-task` unless `cores` says more). */
    slots: Type.Integer({ minimum: 1, maximum: 1000, default: 1 }),
    /** Cores, memory (MB) and GPUs a pilot asks Slurm for and offers jobs; cores: `slots` when absent; memory: Slurm's default (the partition's per node offered) when absent. */
    cores: Type.Optional(Type.Integer({ minimum: 1, maximum: 4096 })),
    memoryMb: Type.Optional(Type.Integer({ minimum: 1 })),
    gpus: Type.Integer({ minimum: 0, maximum: 64, default: 0 }),
    /** A pilot's wall-clock limit (`--time`); it offers jobs what is left of it (CPUTime). */
    timeLimitSeconds: Type.Integer({ minimum: 60, maximum: 30 * 24 * 3600, default: 86400 }),
    /** How long a pilot with nothing to run waits for work before it ends. */
    idleTimeoutSeconds: Type.Integer({ minimum: 0, maximum: 86400, default: 60 }),
    /** How often the factory looks at its pilots and the Waiting jobs. */
    intervalMs: Type.Integer({ minimum: 100, maximum: 3600000, default: 30000 }),
    /** Shared staging directory (relative to the data dir): pilot scripts and batch output. */
    stagingDir: Type.String({ default: 'pilot-staging' }),
    /** `--account`. */
    account: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,128}$' })),
    /** Extra `sbatch` options, one argument each. */
    sbatchOptions: Type.Array(Type.String({ pattern: '^-', maxLength: 256 }), { default: [] }),
    /** Alternative slurm.conf (`SLURM_CONF`). */
    slurmConf: Type.Optional(Type.String()),
    /** Folder holding sbatch, squeue, sacct and scancel; PATH when absent. */
    binDir: Type.Optional(Type.String()),
    /** Longest time one Slurm command may take. */
    commandTimeoutMs: Type.Integer({ minimum: 100, default: 30000 }),
  },
  { additionalProperties: false },
);

export type PilotFactoryConfig = Static<typeof PilotFactorySchema>;

export const AgentSiteSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
    type: Type.Literal('agents'),
    /** How often agents are told to send heartbeats. */
    heartbeatIntervalMs: Type.Integer({ minimum: 100, default: 30000 }),
    /** A Running job whose agent has been silent this long becomes Stalled. */
    stalledAfterMs: Type.Integer({ minimum: 500, default: 300000 }),
    /** A Stalled job still silent this much longer is Failed, then rescheduled while under the limit. */
    failStalledAfterMs: Type.Integer({ minimum: 0, default: 300000 }),
    /** Most jobs one match request may take. */
    maxJobsPerMatch: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
    /** Most jobs of an attribute's value held here at once (matching: docs/matching.md). */
    runningLimits: RunningLimitsSchema,
    /** How long a pilot token lasts (a pilot renews it with its secret or robot credential). */
    pilotTokenLifetimeMs: Type.Integer({ minimum: 10000, maximum: 86400000, default: 900000 }),
    /** Pilots sent by the service to a batch system (docs/pilots.md); none when absent. */
    factory: Type.Optional(PilotFactorySchema),
  },
  { additionalProperties: false },
);

export type AgentSiteConfig = Static<typeof AgentSiteSchema>;
