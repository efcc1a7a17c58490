/**
 * How the registry's SCIM routes authenticate (src/registry/scim/routes.ts): through auth, which the
 * registry may not import (auth builds on the registry). A user's token must carry its group's rights
 * (not a sign-in-only token); a client's own token must carry the scope SCIM asks for.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticateUserOrClient, requireGroupRights } from '../auth/index.ts';
import type { ScimCaller } from '../registry/index.ts';
import type { AppContext } from './context.ts';

export function scimAuthenticate(ctx: AppContext) {
  return async (request: FastifyRequest, reply: FastifyReply, clientScope: string): Promise<ScimCaller> => {
    const caller = await authenticateUserOrClient(ctx, request, reply, clientScope);
    if (caller.kind === 'client') return caller;
    const { principal } = caller;
    requireGroupRights(principal, 'read the registry through SCIM');
    return { kind: 'user', username: principal.username, group: principal.group, properties: principal.properties };
  };
}
