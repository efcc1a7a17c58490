/** POST /agents/match and /agents/heartbeat: an agent takes jobs, and keeps them. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errors, SECURITY } from '../../kernel/openapi.ts';
import { HeartbeatBody, HeartbeatReply, MatchBody, MatchReply } from '../api-schemas.ts';
import type { AgentsService } from '../service.ts';
import { identity, type AgentGuards } from './guards.ts';

const tags = ['Agents'];
const security = SECURITY.token;

export const matchRoutes: FastifyPluginAsyncTypebox<{ service: AgentsService; guards: AgentGuards }> = async (app, { service, guards }) => {
  app.post(
    '/agents/match',
    {
      ...guards.afterBody,
      schema: {
        tags,
        security,
        operationId: 'agentMatch',
        summary: 'Take Waiting jobs for an agent of an agents site',
        body: MatchBody,
        response: { 200: MatchReply, ...errors(400, 401, 403, 413, 415) },
      },
    },
    async (request) => {
      const { agentId, site, slots, ...free } = request.body;
      return service.match(identity(request, agentId), site, slots, free);
    },
  );

  app.post(
    '/agents/heartbeat',
    {
      ...guards.afterBody,
      schema: {
        tags,
        security,
        operationId: 'agentHeartbeat',
        summary: 'Agent heartbeat; the reply lists the jobs the agent must stop, and a pending pilot command',
        body: HeartbeatBody,
        response: { 200: HeartbeatReply, ...errors(400, 401, 403, 413, 415) },
      },
    },
    async (request) => {
      const { kill, command } = await service.heartbeat(identity(request, request.body.agentId), request.body.jobs, request.body.outputs ?? []);
      return { kill, heartbeatIntervalMs: service.heartbeatIntervalMs, ...(command ? { command } : {}) };
    },
  );
};
