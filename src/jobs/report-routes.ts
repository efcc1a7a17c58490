/** POST /jobs/{jid}/report: a running job reports with its own job token, not a user's. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errors } from '../kernel/openapi.ts';
import { JidParams, ReportBody, ReportReply } from './api-schemas.ts';
import { applyReport, authenticateJob } from './reports.ts';
import { security, tags, type JobRouteOptions } from './route-options.ts';

export const reportRoutes: FastifyPluginAsyncTypebox<JobRouteOptions> = async (app, { ctx, config, service }) => {
  app.post(
    '/jobs/:jid/report',
    {
      schema: {
        tags,
        security,
        operationId: 'reportFromJob',
        summary: "A running job's report with its job token ($DIRIGO_JOB_TOKEN): ApplicationStatus, job parameters, heartbeat",
        description: 'Authorization: Bearer with the job token given to the job in DIRIGO_JOB_TOKEN; valid for that job only, while it is Matched, Running, Completing or Stalled. A report that would take the job past jobs.reports (parameters, their bytes, ApplicationStatus changes) is refused whole with 409.',
        params: JidParams,
        body: ReportBody,
        response: { 200: ReportReply, ...errors(400, 401, 409, 413, 415) },
      },
    },
    async (request) => {
      const { jid } = request.params;
      const { status } = await authenticateJob(ctx.db, request, jid);
      await applyReport(ctx.db, service.events, jid, request.body, config.reports);
      return { jid, Status: status };
    },
  );
};
