/** The configuration of a local site (`jobs.sites[]` with `type: local`), the local executor's. */
import { Type, type Static } from 'typebox';
import { RunningLimitsSchema } from '../protocol/running-limits.ts';
import { PLATFORM_PATTERN, REQUIREMENT_LIMITS, TAG_PATTERN } from '../protocol/requirements.ts';

/**
 * What a site's machine offers its jobs (docs/matching.md), each measured on the machine when absent:
 * shared by the local site and the Slurm site (whose CPUs, memory and GPUs Slurm says; tags and platform are the site's).
 */
export const ResourceTags = Type.Array(Type.String({ pattern: TAG_PATTERN.source }), { maxItems: REQUIREMENT_LIMITS.tags, default: [], description: 'tags jobs may require (Tags): GPU, cvmfs:lhcb' });
export const ResourcePlatform = Type.Optional(Type.String({ pattern: PLATFORM_PATTERN.source, description: "DIRAC's platform, e.g. Linux_x86_64_glibc-2.36; measured when absent" }));

/** A site run by the local executor: child processes on this machine. */
export const LocalSiteSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
    type: Type.Literal('local'),
    /** Jobs run at once; 0 means one per CPU. */
    slots: Type.Integer({ minimum: 0, maximum: 4096, default: 0 }),
    /** Processors its jobs share (a job takes the NumberOfProcessors it is given); the machine's (at least `slots`) when absent. */
    cores: Type.Optional(Type.Integer({ minimum: 1, maximum: REQUIREMENT_LIMITS.processors })),
    /** Memory its jobs share, in MB (a job takes its MaxRAM); the machine's when absent. */
    memoryMb: Type.Optional(Type.Integer({ minimum: 1, maximum: REQUIREMENT_LIMITS.maxRamMb })),
    /** GPUs its jobs share (a job takes its NumberOfGPUs). */
    gpus: Type.Integer({ minimum: 0, maximum: REQUIREMENT_LIMITS.gpus, default: 0 }),
    tags: ResourceTags,
    platform: ResourcePlatform,
    /** Where each job gets its working directory (relative to the data dir). */
    workDir: Type.String({ default: 'work' }),
    /** Keep working directories after the job ends (debugging). */
    keepWorkDirs: Type.Boolean({ default: false }),
    /**
     * How payloads are confined: `bubblewrap` runs each in a sandbox that hides the service's files (data
     * dir, keys, config, database, other jobs' working directories); `none` runs them as plain processes
     * of the server's user, which can read all of those. Absent in earlier configs: the sandbox.
     */
    isolation: Type.Union([Type.Literal('bubblewrap'), Type.Literal('none')], { default: 'bubblewrap' }),
    /** Most jobs of an attribute's value held here at once (matching: docs/matching.md). */
    runningLimits: RunningLimitsSchema,
  },
  { additionalProperties: false },
);

export type LocalSiteConfig = Static<typeof LocalSiteSchema>;
