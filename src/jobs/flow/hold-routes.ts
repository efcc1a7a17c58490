/**
 * POST /workflows/{wid}/hold and /release (docs/workflows.md): every job of the workflow that can be held
 * (Waiting or Received) or released (held), each answered as POST /jobs/hold and /jobs/release answer it.
 * The rest of /workflows is workflow-routes.ts'.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireCapability } from '../../auth/index.ts';
import { errors } from '../../kernel/openapi.ts';
import { ActionResults } from '../api-schemas.ts';
import { security, workflowTags as tags, type JobRouteOptions } from '../route-options.ts';
import { WidParams } from './api-schemas.ts';
import { canKillJob } from '../privileges.ts';
import { holdWorkflow, releaseWorkflow, workflowJobsFor } from './holds.ts';
import { visibleWorkflow } from './workflows.ts';

const summaries = {
  hold: 'Hold every job of the workflow that is Waiting or Received (HoldReason Held), answering each job',
  release: 'Release every held job of the workflow (HoldReason Held or ExitCode), oldest first, answering each job',
};

export const workflowHoldRoutes: FastifyPluginAsyncTypebox<JobRouteOptions> = async (app, { ctx, service, auth }) => {
  for (const action of ['hold', 'release'] as const) {
    app.post(
      `/workflows/:wid/${action}`,
      {
        onRequest: auth,
        schema: {
          tags,
          security,
          operationId: `${action}Workflow`,
          summary: summaries[action],
          params: WidParams,
          response: { 200: ActionResults, ...errors(400, 401, 403, 404) },
        },
      },
      async (request) => {
        requireCapability(request.principal!, 'compute.modify');
        const wid = request.params.wid;
        const principal = request.principal!;
        const row = await visibleWorkflow(ctx.db, principal, wid);
        // One who may act on its jobs (all the workflow owner's) does it in bulk; anyone else is answered job by job.
        if (!canKillJob(principal, row)) return { results: await service.act(principal, action, await workflowJobsFor(ctx.db, wid, action)) };
        const results = action === 'hold' ? await holdWorkflow(ctx.db, service.events, principal, wid) : await releaseWorkflow(ctx.db, service.events, principal, wid);
        service.scheduler?.wake();
        return { results };
      },
    );
  }
};
