/**
 * The pull-mode agent interface (DIRAC's pilot model): `dirigo agent` on a worker node asks for work with
 * `POST /agents/match`, downloads the input sandbox, reports Running/Completing, sends heartbeats (whose
 * replies carry kill commands), uploads the output sandbox and reports the final status.
 *
 * Every endpoint needs a token of a group with the `Pilot` property (a robot certificate's flow A token,
 * or a pilot user's); an agent may only report on jobs it holds (403 otherwise). Also starts the stall
 * detector, elected to run on one instance (src/cluster/duties.ts).
 */
import { resolve } from 'node:path';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { requireGroupRights, requireToken, type Principal } from '../auth/index.ts';
import { runDuty } from '../cluster/index.ts';
import { nowIso } from '../kernel/db/database.ts';
import { JobStatus } from '../jobs/index.ts';
import { FileSandboxStore, JidParams, jobTokens, storeOutputTail } from '../jobs/index.ts';
import { changeStatus, wrapMinorStatus } from '../jobs/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { InsufficientPrivileges, InvalidRequest, InvalidTransition, NotFound } from '../kernel/errors.ts';
import { errors, SECURITY } from '../kernel/openapi.ts';
import type { AgentSiteConfig } from '../jobs/index.ts';
import {
  AgentQuery,
  FinishBody,
  HeartbeatBody,
  HeartbeatReply,
  InputSandboxAnswer,
  MatchBody,
  MatchReply,
  StatusBody,
  StatusReply,
  UploadBodies,
  Uploaded,
} from './api-schemas.ts';
import { detectStalls } from './stalls.ts';
import { agentSiteReadiness, forgetGoneAgents, presenceMetrics, seen } from './presence.ts';
import { AGENT_HELD, heartbeat, heldJob, holderOf, matchJobs, type AgentIdentity } from './store.ts';

/** The group property that lets a token act as an agent (DIRAC's `Pilot`, `GenericPilot`). */
export const PILOT_PROPERTY = 'Pilot';

function requirePilot(principal: Principal): void {
  // An agent runs other users' jobs with the rights of its group: a token limited to less may not.
  requireGroupRights(principal, 'act as a job agent');
  if (!principal.properties.includes(PILOT_PROPERTY)) {
    throw new InsufficientPrivileges(`group ${principal.group} does not have the ${PILOT_PROPERTY} property needed to act as a job agent`);
  }
}

export async function agentsRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const jobs = ctx.config.jobs;
  const sites = new Map(jobs.sites.filter((s): s is AgentSiteConfig => s.type === 'agents').map((s) => [s.name, s]));
  const store = new FileSandboxStore(resolve(ctx.config.dataDir, jobs.sandbox.dir));
  const heartbeatIntervalMs = Math.min(...[...sites.values()].map((s) => s.heartbeatIntervalMs), 30000);

  if (sites.size > 0) {
    presenceMetrics(ctx.observability, ctx.db, [...sites.values()]);
    for (const site of sites.values()) ctx.observability.addSite(site.name, 'agents', () => agentSiteReadiness(ctx.db, site));
    // The tightest stall limit decides how often to look (a quarter of it, between 0.25 s and 30 s).
    const interval = Math.max(250, Math.min(30000, ...[...sites.values()].map((s) => s.stalledAfterMs / 4)));
    app.addHook('onReady', async () => {
      const loop = runDuty(ctx.db, 'agent-stalls', interval, async () => {
        await detectStalls(ctx.db, [...sites.values()], jobs.scheduler.maxReschedules);
        await forgetGoneAgents(ctx.db);
      }, app.log);
      ctx.onClose(() => loop.stop());
    });
  }

  // The output sandbox arrives as the raw tar.gz; the store counts its size against the limit.
  app.addContentTypeParser(['application/gzip', 'application/octet-stream'], (_request, payload, done) => done(null, payload));

  const auth = requireToken(ctx);
  const pilot = async (request: FastifyRequest) => {
    requirePilot(request.principal!);
  };
  // JSON bodies are parsed and checked first (a malformed body is a 400 whoever sends it, as on POST /jobs);
  // routes without one refuse a caller that is not an agent before its parameters are looked at, or an
  // upload is read.
  const pilotAfterBody = { preHandler: [auth, pilot] };
  const pilotFirst = { onRequest: [auth, pilot] };
  const tags = ['Agents'];
  const security = SECURITY.token;
  const identity = (request: FastifyRequest, agentId: string): AgentIdentity => ({ user: request.principal!.username, agentId });

  /** The job if this agent holds it. @throws NotFound (no such job), InsufficientPrivileges (not its own), InvalidTransition (its own, but no longer active). */
  const held = async (request: FastifyRequest, jobId: number, agentId: string) => {
    const row = await heldJob(ctx.db, jobId, identity(request, agentId));
    if (row && (AGENT_HELD as string[]).includes(row.status)) return row;
    // Its own job, but killed or rescheduled meanwhile: the agent must stop it.
    if (row) throw new InvalidTransition(`job ${jobId} is ${row.status} now; the report was not applied`);
    const exists = await ctx.db.selectFrom('jobs').select(['job_id', 'status']).where('job_id', '=', jobId).executeTakeFirst();
    if (!exists) throw new NotFound(`job ${jobId} does not exist`);
    throw new InsufficientPrivileges(`agent ${agentId} of ${request.principal!.username} does not hold job ${jobId}`);
  };

  app.post(
    '/agents/match',
    {
      ...pilotAfterBody,
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
      const body = request.body as Static<typeof MatchBody>;
      const site = sites.get(body.site);
      if (!site) {
        const known = [...sites.keys()];
        throw new InvalidRequest(`site: '${body.site}' is not an agents site${known.length ? ` (agents sites: ${known.join(', ')})` : ' (none is configured)'}`);
      }
      await seen(ctx.db, identity(request, body.agentId), site.name);
      const matched = await matchJobs(ctx.db, ctx.dialect, site.name, identity(request, body.agentId), Math.min(body.slots, site.maxJobsPerMatch));
      const tokens = await jobTokens(ctx.db);
      const jobs = matched.map((job) => ({ ...job, JobToken: tokens.sign(job.JobID, job.RescheduleCounter) }));
      return { jobs, heartbeatIntervalMs: site.heartbeatIntervalMs };
    },
  );

  app.post(
    '/agents/heartbeat',
    {
      ...pilotAfterBody,
      schema: {
        tags,
        security,
        operationId: 'agentHeartbeat',
        summary: 'Agent heartbeat; the reply lists the jobs the agent must stop',
        body: HeartbeatBody,
        response: { 200: HeartbeatReply, ...errors(400, 401, 403, 413, 415) },
      },
    },
    async (request) => {
      const body = request.body as Static<typeof HeartbeatBody>;
      await seen(ctx.db, identity(request, body.agentId));
      const jobs = [...new Set(body.jobs)];
      const kill = await heartbeat(ctx.db, identity(request, body.agentId), jobs);
      // Only the output of jobs the agent still holds is kept, cut to what peek serves.
      const held = new Set(jobs.filter((jid) => !kill.includes(jid)));
      for (const { jid, tail, size } of body.outputs ?? []) {
        if (held.has(jid)) await storeOutputTail(ctx.db, jid, tail.slice(-ctx.config.jobs.peekBytes), size);
      }
      return { kill, heartbeatIntervalMs };
    },
  );

  app.get(
    '/agents/jobs/:jid/inputsandbox',
    {
      ...pilotFirst,
      schema: {
        tags,
        security,
        operationId: 'agentGetInputSandbox',
        summary: "A held job's input sandbox (tar.gz)",
        params: JidParams,
        querystring: AgentQuery,
        response: errors(400, 401, 403, 404, 409),
        documented: { responses: { 200: InputSandboxAnswer } },
      },
    },
    async (request, reply) => {
      const { agentId } = request.query as Static<typeof AgentQuery>;
      const row = await held(request, (request.params as { jid: number }).jid, agentId);
      if (!row.input_sandbox) throw new NotFound(`job ${row.job_id} has no input sandbox`);
      reply.type('application/gzip');
      reply.header('cache-control', 'no-store');
      return reply.send(await store.get(row.input_sandbox));
    },
  );

  app.post(
    '/agents/jobs/:jid/status',
    {
      ...pilotAfterBody,
      schema: { tags, security, operationId: 'agentReportStatus', summary: 'Report that a held job runs, or is packing its output', params: JidParams, body: StatusBody, response: { 200: StatusReply, ...errors(400, 401, 403, 404, 409, 413, 415) } },
    },
    async (request) => {
      const body = request.body as Static<typeof StatusBody>;
      const row = await held(request, (request.params as { jid: number }).jid, body.agentId);
      // A report sent again (its answer was lost) changes nothing and is answered as the first one was.
      if (row.status === body.status) return { JobID: row.job_id, Status: body.status };
      const agent = identity(request, body.agentId);
      const now = nowIso();
      const won =
        body.status === 'Running'
          ? await changeStatus(ctx.db, [row.job_id], {
              from: [JobStatus.Matched, JobStatus.Stalled],
              to: JobStatus.Running,
              minorStatus: 'Application running',
              applicationStatus: body.applicationStatus ?? 'Running',
              source: `Agent@${row.site}`,
              executorId: holderOf(agent),
              set: { start_exec_time: now, heartbeat_time: now },
            })
          : await changeStatus(ctx.db, [row.job_id], {
              from: JobStatus.Running,
              to: JobStatus.Completing,
              minorStatus: 'Uploading output sandbox',
              ...(body.applicationStatus ? { applicationStatus: body.applicationStatus } : {}),
              source: `Agent@${row.site}`,
              executorId: holderOf(agent),
              set: { heartbeat_time: now },
            });
      if (won.length === 0) throw await lostRace(row.job_id);
      return { JobID: row.job_id, Status: body.status };
    },
  );

  app.put(
    '/agents/jobs/:jid/outputsandbox',
    {
      ...pilotFirst,
      schema: {
        tags,
        security,
        operationId: 'agentUploadOutputSandbox',
        summary: "Upload a held job's output sandbox (tar.gz body)",
        documented: { body: UploadBodies },
        params: JidParams,
        querystring: AgentQuery,
        response: { 200: Uploaded, ...errors(400, 401, 403, 404, 409, 413, 415) },
      },
    },
    async (request) => {
      const { agentId } = request.query as Static<typeof AgentQuery>;
      const row = await held(request, (request.params as { jid: number }).jid, agentId);
      const body = request.body as Readable | undefined;
      if (!body || typeof (body as { pipe?: unknown }).pipe !== 'function') throw new InvalidRequest('the body must be the output sandbox as application/gzip');
      const stored = await store.put(body as Readable, { bytes: jobs.sandbox.maxSandboxSize, setting: 'jobs.sandbox.maxSandboxSize' });
      const updated = await ctx.db
        .updateTable('jobs')
        .set({ output_sandbox: stored.sha256, output_sandbox_size: stored.size })
        .where('job_id', '=', row.job_id)
        .where('executor_id', '=', holderOf(identity(request, agentId)))
        .where('status', 'in', AGENT_HELD)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) === 0) throw await lostRace(row.job_id);
      return stored;
    },
  );

  app.post(
    '/agents/jobs/:jid/finish',
    {
      ...pilotAfterBody,
      schema: { tags, security, operationId: 'agentFinish', summary: 'Report the final status of a held job', params: JidParams, body: FinishBody, response: { 200: StatusReply, ...errors(400, 401, 403, 404, 409, 413, 415) } },
    },
    async (request) => {
      const body = request.body as Static<typeof FinishBody>;
      // The same outcome reported again by the agent that ran the job (its answer was lost): already applied.
      const replayed = await heldJob(ctx.db, (request.params as { jid: number }).jid, identity(request, body.agentId));
      const already = { done: JobStatus.Done, failed: JobStatus.Failed, rescheduled: undefined }[body.outcome];
      if (replayed && already !== undefined && replayed.status === already) return { JobID: replayed.job_id, Status: already };
      const row = await held(request, (request.params as { jid: number }).jid, body.agentId);
      const holder = holderOf(identity(request, body.agentId));
      const source = `Agent@${row.site}`;
      const set = { exit_code: body.exitCode, end_exec_time: nowIso(), heartbeat_time: nowIso() };
      const common = { minorStatus: body.minorStatus, ...(body.applicationStatus ? { applicationStatus: body.applicationStatus } : {}), source, executorId: holder, set };
      let status: JobStatus = body.outcome === 'done' ? JobStatus.Done : JobStatus.Failed;
      const won = await ctx.db.transaction().execute(async (trx) => {
        if (body.outcome === 'failed') return changeStatus(trx, [row.job_id], { ...common, from: AGENT_HELD, to: JobStatus.Failed });
        if (body.outcome === 'rescheduled') {
          const counter = (await trx.selectFrom('jobs').select('reschedule_counter').where('job_id', '=', row.job_id).executeTakeFirstOrThrow()).reschedule_counter;
          const release = { executor_id: null, executor_ref: null, lease_until: null };
          const max = jobs.scheduler.maxReschedules;
          // The agent's MinorStatus (up to 500 characters, valid) wrapped in the service's words can pass
          // minor_status's 512 (a 500 on PostgreSQL): the agent's words are shortened, not refused, as DIRAC
          // shortens the free-text statuses it logs (ApplicationStatus[:255], StatusSource[:32] in JobLoggingDB).
          // Given back, the Rescheduled row still holds them whole.
          if (counter >= max) {
            return changeStatus(trx, [row.job_id], {
              ...common,
              minorStatus: wrapMinorStatus(body.minorStatus, (said) => `${said}; not rescheduled (already rescheduled ${counter} of ${max} times)`),
              from: AGENT_HELD,
              to: JobStatus.Failed,
              set: { ...set, ...release },
            });
          }
          const back = await changeStatus(trx, [row.job_id], {
            ...common,
            from: [JobStatus.Matched, JobStatus.Running],
            to: JobStatus.Rescheduled,
            set: { ...release, reschedule_counter: counter + 1, start_exec_time: null, heartbeat_time: nowIso() },
          });
          if (back.length === 0) return back;
          status = JobStatus.Waiting;
          return changeStatus(trx, [row.job_id], { from: JobStatus.Rescheduled, to: JobStatus.Waiting, minorStatus: wrapMinorStatus(body.minorStatus, (said) => `Rescheduled (${said}); waiting for a free slot`), source });
        }
        // Done is reached through Completing; an agent that skipped reporting it gets it recorded here.
        await changeStatus(trx, [row.job_id], { from: JobStatus.Running, to: JobStatus.Completing, minorStatus: 'Uploading output sandbox', source, executorId: holder });
        return changeStatus(trx, [row.job_id], { ...common, from: JobStatus.Completing, to: JobStatus.Done });
      });
      if (won.length === 0) throw await lostRace(row.job_id);
      return { JobID: row.job_id, Status: status };
    },
  );

  /** 409 naming the status that won (a kill, a stall) when an agent's report lost the compare-and-set. */
  async function lostRace(jobId: number): Promise<InvalidTransition> {
    const now = await ctx.db.selectFrom('jobs').select('status').where('job_id', '=', jobId).executeTakeFirst();
    return new InvalidTransition(`job ${jobId} is ${now?.status ?? 'gone'} now; the report was not applied`);
  }
}
