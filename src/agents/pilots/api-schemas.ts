/** The pilot registry's answers and requests (docs/pilots.md, API): a pilot, a search, counts, a command. */
import { Type } from 'typebox';
import { PILOT_STATES, type PilotState } from './states.ts';

const SITE_NAME = '^[A-Za-z0-9_.-]{1,64}$';
const When = Type.String({ description: 'ISO 8601, UTC' });
const NullableWhen = Type.Union([When, Type.Null()]);
const NullableInt = (description: string) => Type.Union([Type.Integer(), Type.Null()], { description });
const PilotId = Type.Integer({ minimum: 1, maximum: 2147483647, description: 'a PilotID' });

export const PilotStateName = Type.Unsafe<PilotState>({ type: 'string', enum: [...PILOT_STATES], description: `a pilot state: ${PILOT_STATES.join(', ')}` });
export const PilotCommandName = Type.Unsafe<'drain' | 'stop' | 'revoke'>({ type: 'string', enum: ['drain', 'stop', 'revoke'] });

export const Pilot = Type.Object(
  {
    PilotID: Type.Integer(),
    Site: Type.String(),
    Resource: Type.String({ description: "the Slurm partition (or node) it asked for; '' when none" }),
    Origin: Type.String({ description: '`factory` (submitted by this service) or `manual` (started by hand)' }),
    BatchReference: Type.Union([Type.String(), Type.Null()], { description: "the batch system's id (Slurm job id); null for a manual pilot" }),
    Owner: Type.String({ description: 'the user whose rights it acts with' }),
    AgentID: Type.Union([Type.String(), Type.Null()], { description: 'the agent id it uses in /agents calls; null before its first token' }),
    State: PilotStateName,
    Reason: Type.String({ description: 'why it is in its state' }),
    Command: Type.Union([Type.Literal('drain'), Type.Literal('stop'), Type.Null()], { description: 'sent in its next heartbeat reply; null when none' }),
    RevokedBy: Type.Union([Type.String(), Type.Null()], { description: 'who revoked it; null when nobody did' }),
    Slots: NullableInt('jobs it runs at once'),
    Cores: NullableInt('cores'),
    MemoryMB: NullableInt('memory, MB'),
    GPUs: NullableInt('GPUs'),
    CPUTime: NullableInt('wall-clock seconds'),
    SubmittedAt: When,
    StartedAt: NullableWhen,
    LastSeen: NullableWhen,
    EndedAt: NullableWhen,
    JobCount: Type.Integer({ description: 'jobs it took' }),
  },
  { additionalProperties: false },
);

export const PilotJob = Type.Object(
  {
    JobID: Type.Integer(),
    TakenAt: When,
    Status: Type.Union([Type.String(), Type.Null()], { description: "the job's status now; null when the job no longer exists" }),
  },
  { additionalProperties: false },
);

export const PilotDetail = Type.Object({ ...Pilot.properties, Jobs: Type.Array(PilotJob, { description: 'the jobs it took, oldest first' }) }, { additionalProperties: false });

const Filters = {
  site: Type.Optional(Type.String({ pattern: SITE_NAME, description: 'pilots of this site' })),
  state: Type.Optional(Type.Array(PilotStateName, { maxItems: PILOT_STATES.length, description: 'pilots in any of these states (repeat the key)' })),
  origin: Type.Optional(Type.Unsafe<'factory' | 'manual'>({ type: 'string', enum: ['factory', 'manual'], description: 'factory or manual' })),
  owner: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'pilots acting for this user' })),
  batchRef: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: "the batch system's id" })),
  job: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'a JobID: the pilots that took it' })),
};

export const PilotSearchQuery = Type.Object(
  {
    ...Filters,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'at most this many pilots, newest first (default 100)' })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000, description: 'skip this many (default 0)' })),
  },
  { additionalProperties: false },
);

export const PilotSummaryQuery = Type.Object(Filters, { additionalProperties: false });

export const PilotList = Type.Object({ pilots: Type.Array(Pilot, { description: 'newest first' }), total: Type.Integer({ description: 'how many match, in all pages' }) }, { additionalProperties: false });

export const PilotSummary = Type.Object(
  { summary: Type.Array(Type.Object({ Site: Type.String(), State: PilotStateName, Count: Type.Integer() }, { additionalProperties: false }), { description: 'one row per site and state that has pilots, by site then state' }) },
  { additionalProperties: false },
);

export const PilotParams = Type.Object({ pid: PilotId });

export const PilotCommandBody = Type.Object(
  {
    command: PilotCommandName,
    pilots: Type.Optional(Type.Array(PilotId, { minItems: 1, maxItems: 1000, description: 'these pilots (or `site`)' })),
    site: Type.Optional(Type.String({ pattern: SITE_NAME, description: "every not-ended pilot of this site (or `pilots`)" })),
    reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, pattern: '\\S', description: "why: a revoked pilot's Reason (`revoked by <user>` when absent); in the service's log for drain and stop" })),
  },
  { additionalProperties: false },
);

export const PilotCommandReply = Type.Object(
  { command: PilotCommandName, pilots: Type.Array(Type.Integer(), { description: 'the pilots it applied to (those not ended)' }) },
  { additionalProperties: false },
);
