/** The configuration of a local site (`jobs.sites[]` with `type: local`), the local executor's. */
import { Type, type Static } from 'typebox';
import { RunningLimitsSchema } from '../protocol/running-limits.ts';

/** A site run by the local executor: child processes on this machine. */
export const LocalSiteSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
    type: Type.Literal('local'),
    /** Jobs run at once; 0 means one per CPU. */
    slots: Type.Integer({ minimum: 0, maximum: 4096, default: 0 }),
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
