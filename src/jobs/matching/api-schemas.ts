/**
 * Shapes of GET /jobs/shares and GET /jobs/{jid}/matching: what `dirigo jobs shares`, `dirigo jobs why`
 * and the web job panel read, and what the OpenAPI document shows.
 */
import { Type, type Static } from 'typebox';

const Share = {
  share: Type.Number({ minimum: 0, description: 'the configured share (groups); equal inside a group (users)' }),
  target: Type.Number({ minimum: 0, maximum: 1, description: 'the fraction of recent work it should get, among those with work' }),
  actual: Type.Number({ minimum: 0, maximum: 1, description: 'the fraction of recent work it got (decayed usage over everyone\'s)' }),
  usage: Type.Number({ minimum: 0, description: 'decayed processors matched lately (jobs.fairShare.halfLifeMs)' }),
  waiting: Type.Integer({ minimum: 0, description: 'its Waiting jobs' }),
  running: Type.Integer({ minimum: 0, description: 'its Matched, Running and Completing jobs' }),
};

export const UserShare = Type.Object({ user: Type.String(), ...Share });
export const GroupShare = Type.Object({ group: Type.String(), ...Share, users: Type.Array(UserShare) });

export const SharesAnswer = Type.Object({
  halfLifeSeconds: Type.Number({ description: 'how fast past usage fades: it counts half after this long' }),
  groups: Type.Array(GroupShare, { description: 'groups with Waiting or recent work, furthest below their target first' }),
});
export type SharesAnswer = Static<typeof SharesAnswer>;

/** Why a job does not go to a resource, naming what holds it back. */
export const HoldBack = Type.Object({
  kind: Type.Union([Type.Literal('requirement'), Type.Literal('ban'), Type.Literal('limit'), Type.Literal('share'), Type.Literal('status')]),
  /** The requirement (NumberOfProcessors, MaxRAM, ...), or the limited attribute (JobType, ...), or Site. */
  attribute: Type.String(),
  reason: Type.String(),
});

export const ResourceVerdict = Type.Object({
  site: Type.String(),
  resource: Type.String({ description: "a Slurm partition, an agent class's resource name; '' for the site as a whole" }),
  kind: Type.Union([Type.Literal('local'), Type.Literal('slurm'), Type.Literal('agents')]),
  eligible: Type.Boolean({ description: 'whether the job could be matched there now' }),
  holdBack: Type.Array(HoldBack),
});

export const MatchingAnswer = Type.Object({
  JobID: Type.Integer(),
  Status: Type.String(),
  TaskQueueID: Type.Union([Type.Integer(), Type.Null()], { description: 'its task queue while it waits' }),
  requirements: Type.Object({}, { additionalProperties: true, description: 'its requirements as matching reads them' }),
  resources: Type.Array(ResourceVerdict, { description: 'every configured site, Slurm partition and live agent class' }),
  share: Type.Union([
    Type.Object({ group: Type.String(), user: Type.String(), groupTarget: Type.Number(), groupActual: Type.Number(), userTarget: Type.Number(), userActual: Type.Number(), ahead: Type.Integer({ description: "jobs of its owner's that go first (higher Priority, older)" }) }),
    Type.Null(),
  ]),
  summary: Type.String({ description: 'one sentence: why it waits, or that it is no longer waiting' }),
});
export type MatchingAnswer = Static<typeof MatchingAnswer>;
