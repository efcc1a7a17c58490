/**
 * Who may call the agents endpoints, and the identity an agent acts under: a pilot token (docs/pilots.md),
 * good only for its own pilot's agent id and site, or the access token of a group with the Pilot property
 * (an agent of the previous release, registered as a manual pilot at its first match).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireGroupRights, requireToken, type Principal } from '../../auth/index.ts';
import type { AppContext } from '../../kernel/context.ts';
import { InsufficientPrivileges } from '../../kernel/errors.ts';
import type { AgentIdentity } from '../identity.ts';
import { pilotAgentId } from '../pilots/release.ts';
import type { PilotRow } from '../pilots/store.ts';
import { PILOT_TOKEN_PREFIX, verifyPilotToken } from '../pilots/tokens.ts';

/** The group property that lets a token act as an agent (DIRAC's `Pilot`, `GenericPilot`). */
export const PILOT_PROPERTY = 'Pilot';

declare module 'fastify' {
  interface FastifyRequest {
    /** The pilot a pilot token speaks for (agents' routes only); null for an access token. */
    pilot: PilotRow | null;
  }
}

export function requirePilot(principal: Principal): void {
  // An agent runs other users' jobs with the rights of its group: a token limited to less may not.
  requireGroupRights(principal, 'act as a job agent');
  if (!principal.properties.includes(PILOT_PROPERTY)) {
    throw new InsufficientPrivileges(`group ${principal.group} does not have the ${PILOT_PROPERTY} property needed to act as a job agent`);
  }
}

// RFC 6750 §2.1: a pilot token comes in the Authorization header only; anywhere else it is no access token (401).
const BEARER = /^bearer +(\S+) *$/i;

/** The pilot token of the Authorization header, when it carries one. */
export function pilotBearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const token = header === undefined ? undefined : BEARER.exec(header)?.[1];
  return token?.startsWith(PILOT_TOKEN_PREFIX) ? token : undefined;
}

export type AgentGuards = ReturnType<typeof agentGuards>;

export function agentGuards(ctx: AppContext) {
  const auth = requireToken(ctx);
  const agent = async (request: FastifyRequest, reply: FastifyReply) => {
    const token = pilotBearer(request);
    if (token !== undefined) {
      request.pilot = await verifyPilotToken(ctx.db, token);
      return;
    }
    await auth(request, reply);
    requirePilot(request.principal!);
  };
  return {
    // JSON bodies are parsed and checked first (a malformed body is a 400 whoever sends it, as on POST
    // /jobs); routes without one refuse a caller that is not an agent before its parameters are looked
    // at, or an upload is read.
    afterBody: { preHandler: [agent] },
    first: { onRequest: [agent] },
  };
}

const PILOT_AGENT_ID = /^pilot-\d+$/;

/** The agent `agentId` of the request's pilot, or of its (Pilot group) user. @throws InsufficientPrivileges for another pilot's agent id */
export function identity(request: FastifyRequest, agentId: string): AgentIdentity {
  const pilot = request.pilot;
  if (pilot) {
    const own = pilotAgentId(pilot.pilot_id);
    if (agentId !== own) throw new InsufficientPrivileges(`the token of pilot ${pilot.pilot_id} acts only as agent ${own}, not ${agentId}`);
    return { user: pilot.owner, agentId, pilot };
  }
  // `pilot-<PilotID>` is a pilot token's agent id: an access token acting under it would hold that pilot's jobs.
  if (PILOT_AGENT_ID.test(agentId)) throw new InsufficientPrivileges(`agent id ${agentId} is reserved for the pilot token of pilot ${agentId.slice(6)}; an access token may not use it`);
  return { user: request.principal!.username, agentId };
}
