/** Matching as users see it: GET /jobs/shares (fair share) and GET /jobs/{jid}/matching (why a job waits). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireCapability } from '../auth/index.ts';
import { errors } from '../kernel/openapi.ts';
import { JidParams } from './api-schemas.ts';
import { MatchingAnswer, SharesAnswer } from './matching/api-schemas.ts';
import { explainMatching } from './matching/explain.ts';
import { registryShareOf } from './matching/group-share.ts';
import { fairShares } from './matching/shares.ts';
import { security, tags, type JobRouteOptions } from './route-options.ts';

export const matchingRoutes: FastifyPluginAsyncTypebox<JobRouteOptions> = async (app, { ctx, config, service, auth }) => {
  // onRequest: the caller is known (and in the access log) before the parameters are validated.
  const authFirst = { onRequest: auth };
  const registryShare = registryShareOf(ctx);

  app.get(
    '/jobs/shares',
    {
      ...authFirst,
      schema: {
        tags,
        security,
        operationId: 'getJobShares',
        summary: "Fair share: each group's and user's share, target and actual fraction of recent work, Waiting and running jobs (docs/matching.md)",
        response: { 200: SharesAnswer, ...errors(401, 403) },
      },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.read');
      return fairShares(ctx.db, config, { registryShare });
    },
  );

  app.get(
    '/jobs/:jid/matching',
    {
      ...authFirst,
      schema: {
        tags,
        security,
        operationId: 'getJobMatching',
        summary: 'Why a job waits: for every site, Slurm partition and live agent class, whether it could go there, and the requirement, ban, limit or share that holds it back',
        params: JidParams,
        response: { 200: MatchingAnswer, ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.read');
      // A job the caller may not see is answered as one that does not exist (privileges.ts).
      await service.visibleJob(request.principal!, request.params.jid);
      return explainMatching(ctx.db, config, request.params.jid, { registryShare });
    },
  );
};
