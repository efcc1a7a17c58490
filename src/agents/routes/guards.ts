/** Who may call the agents endpoints, and the identity an agent acts under. */
import type { FastifyRequest } from 'fastify';
import { requireGroupRights, requireToken, type Principal } from '../../auth/index.ts';
import type { AppContext } from '../../kernel/context.ts';
import { InsufficientPrivileges } from '../../kernel/errors.ts';
import type { AgentIdentity } from '../identity.ts';

/** The group property that lets a token act as an agent (DIRAC's `Pilot`, `GenericPilot`). */
export const PILOT_PROPERTY = 'Pilot';

function requirePilot(principal: Principal): void {
  // An agent runs other users' jobs with the rights of its group: a token limited to less may not.
  requireGroupRights(principal, 'act as a job agent');
  if (!principal.properties.includes(PILOT_PROPERTY)) {
    throw new InsufficientPrivileges(`group ${principal.group} does not have the ${PILOT_PROPERTY} property needed to act as a job agent`);
  }
}

export type AgentGuards = ReturnType<typeof agentGuards>;

export function agentGuards(ctx: AppContext) {
  const auth = requireToken(ctx);
  const pilot = async (request: FastifyRequest) => {
    requirePilot(request.principal!);
  };
  return {
    // JSON bodies are parsed and checked first (a malformed body is a 400 whoever sends it, as on POST
    // /jobs); routes without one refuse a caller that is not an agent before its parameters are looked
    // at, or an upload is read.
    afterBody: { preHandler: [auth, pilot] },
    first: { onRequest: [auth, pilot] },
  };
}

/** The agent `agentId` of the request's (pilot) user. */
export function identity(request: FastifyRequest, agentId: string): AgentIdentity {
  return { user: request.principal!.username, agentId };
}
