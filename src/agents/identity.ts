/**
 * Who holds an agent's jobs. A job taken by an agent is held as `agent:<agentId>` (its `executor_id`) with
 * the pilot identity that took it (`{"user", "agentId"}`, its `executor_ref`): only that pilot user's agent
 * may report on it afterwards.
 */
import type { PullHolder } from '../jobs/index.ts';
import type { PilotRow } from './pilots/store.ts';

export interface AgentIdentity {
  /** The pilot user (token subject), or the owner of the pilot a pilot token speaks for. */
  user: string;
  /** The agent process, chosen by the agent (`[A-Za-z0-9_.-]{1,40}`); `pilot-<PilotID>` with a pilot token. */
  agentId: string;
  /** With a pilot token: its pilot's row, as read for this request. Absent for a robot's access token. */
  pilot?: PilotRow;
}

/** What every agent's holder id starts with (stall detection looks only at these). */
export const AGENT_HOLDER_PREFIX = 'agent:';

export function holderOf(agent: AgentIdentity): PullHolder {
  return { executorId: `${AGENT_HOLDER_PREFIX}${agent.agentId}`, executorRef: JSON.stringify({ user: agent.user, agentId: agent.agentId }) };
}
