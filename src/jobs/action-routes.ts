/** Acting on jobs: POST /jobs/kill, /jobs/reschedule, /jobs/delete, /jobs/hold, /jobs/release on many, DELETE /jobs/{jid} on one. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireCapability } from '../auth/index.ts';
import { errors } from '../kernel/openapi.ts';
import { JOB_ACTIONS, type JobAction } from './actions.ts';
import { ActionResults, JidParams, JobIds, Killed } from './api-schemas.ts';
import { security, tags, type JobRouteOptions } from './route-options.ts';

const actionSummaries: Record<JobAction, string> = {
  kill: 'Kill jobs: each leaves activity and its payload is stopped',
  reschedule: `Reschedule jobs that ended (Done, Failed, Killed): each waits to run again, at most jobs.scheduler.maxReschedules times`,
  delete: 'Delete jobs that ended or wait: each becomes Deleted, hidden from listings, its sandboxes purged after jobs.deletedRetentionMs',
  hold: 'Hold jobs: a Waiting one goes back to Received, a Received one stays there, each with HoldReason Held until released',
  release: 'Release held jobs (HoldReason Held or ExitCode): each goes through the gatekeeper at once, to Waiting, or Received for its dependencies or its workflow\'s MaxRunning',
};

export const actionRoutes: FastifyPluginAsyncTypebox<JobRouteOptions> = async (app, { service, auth }) => {
  for (const action of JOB_ACTIONS) {
    app.post(
      `/jobs/${action}`,
      {
        preHandler: auth,
        schema: {
          tags,
          security,
          operationId: `${action}Jobs`,
          summary: actionSummaries[action],
          body: JobIds,
          response: { 200: ActionResults, ...errors(400, 401, 403, 413, 415) },
        },
      },
      async (request) => {
        requireCapability(request.principal!, action === 'kill' ? 'compute.cancel' : 'compute.modify');
        return { results: await service.act(request.principal!, action, request.body.jids) };
      },
    );
  }

  app.delete(
    '/jobs/:jid',
    {
      // onRequest: the caller is known (and in the access log) before the parameters are validated.
      onRequest: auth,
      schema: {
        tags,
        security,
        operationId: 'killJob',
        summary: 'Kill a job: it leaves activity, its process is terminated',
        params: JidParams,
        response: { 200: Killed, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      requireCapability(request.principal!, 'compute.cancel');
      const { jid } = request.params;
      await service.kill(request.principal!, jid);
      return { jid, Status: 'Killed' as const };
    },
  );
};
