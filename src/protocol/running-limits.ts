/**
 * Running limits of a site (`jobs.sites[].runningLimits`, DIRAC's RunningLimit): at most this many jobs
 * with an attribute's value held at the site at once (Matched, Running or Completing), e.g.
 * `{ JobType: { User: 100 } }`. Shared by every site type's configuration.
 */
import { Type, type Static } from 'typebox';

/** The attributes a limit may be set on: those a task queue is keyed by. */
export const LIMITED_ATTRIBUTES = ['JobType', 'Owner', 'OwnerGroup'] as const;

const PerValue = Type.Record(Type.String({ minLength: 1, maxLength: 64 }), Type.Integer({ minimum: 0, maximum: 10_000_000 }));

export const RunningLimitsSchema = Type.Object(
  { JobType: Type.Optional(PerValue), Owner: Type.Optional(PerValue), OwnerGroup: Type.Optional(PerValue) },
  { additionalProperties: false, default: {}, description: 'most jobs of an attribute value held at this site at once' },
);

export type RunningLimits = Static<typeof RunningLimitsSchema>;
