/**
 * A site served by pull-mode agents (`type: agents` in `jobs.sites`): `dirigo agent --site NAME` on worker
 * nodes asks `POST /agents/match` for work. No server-side executor runs these jobs; the service only
 * watches the agents' heartbeats.
 */
import { Type, type Static } from 'typebox';
import { RunningLimitsSchema } from '../protocol/running-limits.ts';

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
  },
  { additionalProperties: false },
);

export type AgentSiteConfig = Static<typeof AgentSiteSchema>;
