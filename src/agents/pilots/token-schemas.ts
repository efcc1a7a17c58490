/** Shapes of the pilots' identity bodies and answers (docs/pilots.md "API"): registration, token, end. */
import { Type } from 'typebox';
import { REQUIREMENT_LIMITS } from '../../protocol/requirements.ts';

const INT32_MAX = 2 ** 31 - 1;
const PilotId = Type.Integer({ minimum: 1, maximum: INT32_MAX, description: 'the PilotID' });

export const PilotParams = Type.Object({ pid: PilotId });

/** POST /pilots: what a hand-started agent offers (kept in its registry row). */
export const RegisterBody = Type.Object(
  {
    site: Type.String({ minLength: 1, maxLength: 64, description: 'a configured site of type agents' }),
    slots: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'jobs it runs at once' })),
    cores: Type.Optional(Type.Integer({ minimum: 0, maximum: REQUIREMENT_LIMITS.processors })),
    memoryMb: Type.Optional(Type.Integer({ minimum: 0, maximum: REQUIREMENT_LIMITS.maxRamMb })),
    gpus: Type.Optional(Type.Integer({ minimum: 0, maximum: REQUIREMENT_LIMITS.gpus })),
    cpuTime: Type.Optional(Type.Integer({ minimum: 0, maximum: INT32_MAX, description: 'seconds it may run jobs' })),
  },
  { additionalProperties: false },
);

/** POST /pilots/{pid}/token: a factory pilot's secret, or nothing when the bearer is the credential. */
export const TokenBody = Type.Object(
  { secret: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: "a factory pilot's secret (DIRIGO_PILOT_SECRET)" })) },
  { additionalProperties: false },
);

/** A pilot token (RFC 6749 §5.1's field names). */
export const PilotTokenAnswer = Type.Object({
  PilotID: PilotId,
  AgentID: Type.String({ description: 'the agent id it uses in /agents calls: pilot-<PilotID>' }),
  access_token: Type.String({ description: 'dirigo-pilot.<PilotID>.<expiry>.<MAC>' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ minimum: 1, description: 'seconds' }),
});

export const EndBody = Type.Object(
  {
    state: Type.Union([Type.Literal('Done'), Type.Literal('Failed')], { description: 'Done: it ended normally; Failed: on an error' }),
    reason: Type.String({ maxLength: 512, description: 'why it ended' }),
  },
  { additionalProperties: false },
);

export const EndAnswer = Type.Object({ PilotID: PilotId, State: Type.String() });
