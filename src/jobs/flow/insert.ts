/**
 * Storing jobs that may not wait yet (docs/workflows.md): held ones, ones with parents, ones of a throttled
 * set. Unlike plain submissions (store.ts, group commit) they start Received with a HoldReason, and their
 * workflow rows and dependencies are written with them: one transaction, all or nothing. The gatekeeper
 * (gates.ts) moves them on.
 */
import type { Db } from '../../kernel/db/database.ts';
import { nowIso } from '../../kernel/db/database.ts';
import type { CheckedManifest } from '../manifest.ts';
import { transitions } from '../metrics.ts';
import { JobStatus } from '../model.ts';
import { fillJobIds, jobRow, type InputSandboxRef, type Submitter } from '../store.ts';
import { taskQueueIds } from '../matching/task-queues.ts';
import type { DependencyCondition } from './manifest-keys.ts';

/** A node as the workflows row keeps it (`nodes`, JSON). */
export interface NodeSpec {
  Name: string;
  DependsOn: string[];
  DependencyType: DependencyCondition;
}

export interface NewWorkflow {
  name: string;
  kind: 'workflow' | 'parametric';
  maxRunning: number | null;
  nodes: NodeSpec[];
}

export interface FlowJob {
  checked: CheckedManifest;
  /** Index into the submission's workflows, or null. */
  workflow: number | null;
  node: string | null;
  hold: boolean;
  /** Parents stored before this submission. */
  parentIds: readonly number[];
  /** Parents of this submission: indices into its jobs. */
  parentJobs: readonly number[];
  condition: DependencyCondition;
}

/** Why a new job may not wait yet, in the words of its MinorStatus. */
function holdOf(job: FlowJob, workflows: readonly NewWorkflow[]): { reason: string; minor: string } | null {
  if (job.hold) return { reason: 'Held', minor: 'Held: submitted with Hold; release it to let it run' };
  const parents = job.parentIds.length + job.parentJobs.length;
  if (parents > 0) return { reason: 'Dependency', minor: `Dependency: waiting for ${parents} parent job${parents === 1 ? '' : 's'} (${job.condition})` };
  const cap = job.workflow === null ? null : workflows[job.workflow]!.maxRunning;
  if (cap !== null) return { reason: 'Throttled', minor: `Throttled: waiting for room in its workflow (MaxRunning ${cap})` };
  return null;
}

const CHUNK = 200;

/**
 * Inserts `workflows`, then `jobs` (Received with their HoldReason, or Waiting), their history and their
 * dependencies, in one transaction. The input sandbox must already be stored.
 * @returns the jobs' ids in the order of `jobs`, and the workflows' ids
 */
export async function insertFlowJobs(
  db: Db,
  who: Submitter,
  jobs: readonly FlowJob[],
  workflows: readonly NewWorkflow[],
  sandbox: InputSandboxRef | undefined,
): Promise<{ ids: number[]; workflowIds: number[] }> {
  const now = nowIso();
  // Each job's task queue, made first on its own as for plain submissions (an empty queue is harmless).
  const tqIds = await taskQueueIds(db, jobs.map((j) => ({ owner: who.username, ownerGroup: who.group, requirements: j.checked.requirements })));
  const holds = jobs.map((j) => holdOf(j, workflows));
  const result = await db.transaction().execute(async (trx) => {
    const workflowIds: number[] = [];
    for (const w of workflows) {
      const row = await trx
        .insertInto('workflows')
        .values({ name: w.name, kind: w.kind, owner: who.username, owner_group: who.group, max_running: w.maxRunning, nodes: JSON.stringify(w.nodes), submission_time: now })
        .returning('workflow_id')
        .executeTakeFirstOrThrow();
      workflowIds.push(Number(row.workflow_id));
    }
    const ids: number[] = [];
    for (let i = 0; i < jobs.length; i += CHUNK) {
      const rows = jobs.slice(i, i + CHUNK).map((job, k) => {
        const hold = holds[i + k];
        return {
          ...jobRow(who, job.checked, sandbox, tqIds[i + k]!, now),
          // Every row names the same columns: SQLite has no DEFAULT in a multi-row VALUES.
          ...(hold ? { status: JobStatus.Received, minor_status: hold.minor, hold_reason: hold.reason } : { hold_reason: '' }),
          workflow_id: job.workflow === null ? null : workflowIds[job.workflow]!,
          workflow_node: job.node,
        };
      });
      const inserted = await trx.insertInto('jobs').values(rows).returning('job_id').execute();
      // One statement numbers its rows in order (other writers' ids may come between, never inside).
      const chunk = inserted.map((r) => Number(r.job_id)).sort((a, b) => a - b);
      await fillJobIds(trx, rows, chunk);
      const history = chunk.flatMap((job_id, k) => {
        const hold = holds[i + k];
        const step = (status: JobStatus, minor: string) => ({ job_id, status, minor_status: minor, application_status: 'Unknown', status_time: now, source: 'JobManager' });
        return hold ? [step(JobStatus.Received, hold.minor)] : [step(JobStatus.Received, 'Job accepted'), step(JobStatus.Waiting, rows[k]!.minor_status!)];
      });
      await trx.insertInto('job_status_history').values(history).execute();
      ids.push(...chunk);
    }
    const deps = jobs.flatMap((job, k) =>
      [...new Set([...job.parentIds, ...job.parentJobs.map((p) => ids[p]!)])].map((parent_id) => ({ job_id: ids[k]!, parent_id, condition: job.condition })),
    );
    for (let i = 0; i < deps.length; i += 500) await trx.insertInto('job_dependencies').values(deps.slice(i, i + 500)).execute();
    return { ids, workflowIds };
  });
  const received = holds.filter((h) => h !== null).length;
  if (received > 0) transitions.inc({ to: JobStatus.Received }, received);
  if (jobs.length > received) transitions.inc({ to: JobStatus.Waiting }, jobs.length - received);
  return result;
}
