/**
 * Reading workflows (docs/workflows.md "Workflows"): the list, one workflow's summary with its nodes and
 * jobs. Who may see a workflow follows the jobs' rules (privileges.ts): its owner, JobSharing members of its
 * group, JobAdministrator and JobMonitor; a workflow someone may not see is answered as one that does not exist.
 */
import type { Principal } from '../../auth/index.ts';
import type { Db } from '../../kernel/db/database.ts';
import { NotFound } from '../../kernel/errors.ts';
import { isFinal, JobStatus } from '../model.ts';
import { canSeeJob, type Visibility } from '../privileges.ts';
import type { WorkflowTable } from '../tables.ts';
import type { Selectable } from 'kysely';
import type { NodeSpec } from './insert.ts';

type WorkflowRow = Selectable<WorkflowTable>;

export interface WorkflowSummary {
  WorkflowID: number;
  Name: string;
  Kind: string;
  Owner: string;
  OwnerGroup: string;
  MaxRunning: number | null;
  SubmissionTime: string;
  Jobs: number;
  Counts: Record<string, number>;
  Status: string;
}

/**
 * Active while a job has not ended; then Done (all Done), Failed (one Failed), else Killed. Deleted jobs
 * are left out (a deleted job says nothing of how the work went); Deleted when every job is.
 */
function overallStatus(counts: Record<string, number>): string {
  const statuses = Object.keys(counts).filter((s) => s !== JobStatus.Deleted);
  if (statuses.length === 0) return JobStatus.Deleted;
  if (statuses.some((s) => !isFinal(s))) return 'Active';
  if (statuses.every((s) => s === JobStatus.Done)) return JobStatus.Done;
  if (counts[JobStatus.Failed]) return JobStatus.Failed;
  return JobStatus.Killed;
}

function summaryOf(row: WorkflowRow, counts: Record<string, number>): WorkflowSummary {
  return {
    WorkflowID: Number(row.workflow_id),
    Name: row.name,
    Kind: row.kind,
    Owner: row.owner,
    OwnerGroup: row.owner_group,
    MaxRunning: row.max_running,
    SubmissionTime: row.submission_time,
    Jobs: Object.values(counts).reduce((a, b) => a + b, 0),
    Counts: counts,
    Status: overallStatus(counts),
  };
}

/** Status → count of each workflow's jobs. */
async function countsOf(db: Db, ids: readonly number[]): Promise<Map<number, Record<string, number>>> {
  const out = new Map<number, Record<string, number>>(ids.map((id) => [id, {}]));
  if (ids.length === 0) return out;
  const rows = await db
    .selectFrom('jobs')
    .select(['workflow_id', 'status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('workflow_id', 'in', ids)
    .groupBy(['workflow_id', 'status'])
    .execute();
  for (const r of rows) out.get(Number(r.workflow_id))![r.status] = Number(r.n);
  return out;
}

/** The workflows `visibility` shows (of `owner` when given), newest first. */
export async function listWorkflows(db: Db, visibility: Visibility, owner: string | undefined, maxItems: number): Promise<WorkflowSummary[]> {
  let q = db.selectFrom('workflows').selectAll();
  if (visibility.kind === 'own') q = q.where('owner', '=', visibility.owner);
  else if (visibility.kind === 'group') q = q.where((eb) => eb.or([eb('owner', '=', visibility.owner), eb('owner_group', '=', visibility.group)]));
  if (owner !== undefined) q = q.where('owner', '=', owner);
  const rows = await q.orderBy('workflow_id', 'desc').limit(maxItems).execute();
  const counts = await countsOf(db, rows.map((r) => Number(r.workflow_id)));
  return rows.map((r) => summaryOf(r, counts.get(Number(r.workflow_id))!));
}

/** The workflow, when `principal` may see it. @throws NotFound, also for one it may not see */
export async function visibleWorkflow(db: Db, principal: Principal, workflowId: number): Promise<WorkflowRow> {
  const row = await db.selectFrom('workflows').selectAll().where('workflow_id', '=', workflowId).executeTakeFirst();
  if (!row || !canSeeJob(principal, row)) throw new NotFound(`workflow ${workflowId} does not exist`);
  return row;
}

/** Its summary, nodes (with their jobs and counts) and jobs (with their parents `principal` may see: one outside the workflow may be another's). */
export async function describeWorkflow(db: Db, principal: Principal, row: WorkflowRow) {
  const id = Number(row.workflow_id);
  const [jobs, deps] = await Promise.all([
    db
      .selectFrom('jobs')
      .select(['job_id', 'workflow_node', 'status', 'minor_status', 'hold_reason', 'retry_counter'])
      .where('workflow_id', '=', id)
      .orderBy('job_id')
      .execute(),
    db
      .selectFrom('job_dependencies as d')
      .innerJoin('jobs as p', 'p.job_id', 'd.parent_id')
      .select(['d.job_id', 'd.parent_id', 'p.owner', 'p.owner_group'])
      .where('d.job_id', 'in', (eb) => eb.selectFrom('jobs').select('job_id').where('workflow_id', '=', id))
      .orderBy('d.parent_id')
      .execute(),
  ]);
  const parents = new Map<number, number[]>();
  for (const d of deps) {
    if (!canSeeJob(principal, d)) continue;
    const list = parents.get(Number(d.job_id)) ?? [];
    list.push(Number(d.parent_id));
    parents.set(Number(d.job_id), list);
  }
  const counts: Record<string, number> = {};
  for (const j of jobs) counts[j.status] = (counts[j.status] ?? 0) + 1;
  const byNode = new Map<string | null, typeof jobs>();
  for (const j of jobs) {
    const list = byNode.get(j.workflow_node);
    if (list) list.push(j);
    else byNode.set(j.workflow_node, [j]);
  }
  // A parametric set's jobs have no node name: they are its one node's.
  const nodeOf = (name: string | null) => (row.kind === 'parametric' ? null : name);
  const specs = JSON.parse(row.nodes) as NodeSpec[];
  const nodes = specs.map((n) => {
    const mine = byNode.get(nodeOf(n.Name)) ?? [];
    const nodeCounts: Record<string, number> = {};
    for (const j of mine) nodeCounts[j.status] = (nodeCounts[j.status] ?? 0) + 1;
    return { Name: n.Name, DependsOn: n.DependsOn, DependencyType: n.DependencyType, JobIDs: mine.map((j) => Number(j.job_id)), Counts: nodeCounts };
  });
  return {
    ...summaryOf(row, counts),
    Nodes: nodes,
    Jobs: jobs.map((j) => ({
      JobID: Number(j.job_id),
      Node: row.kind === 'parametric' ? (specs[0]?.Name ?? null) : j.workflow_node,
      Status: j.status,
      MinorStatus: j.minor_status,
      HoldReason: j.hold_reason,
      RetryCounter: j.retry_counter,
      Parents: parents.get(Number(j.job_id)) ?? [],
    })),
  };
}

/** The workflow's jobs that have not ended: held ones first (so that no gate fails them while the others are killed), newest first. */
export async function activeJobsOf(db: Db, workflowId: number): Promise<number[]> {
  const rows = await db.selectFrom('jobs').select(['job_id', 'status']).where('workflow_id', '=', workflowId).orderBy('job_id', 'desc').execute();
  const active = rows.filter((r) => !isFinal(r.status));
  return [...active.filter((r) => r.status === JobStatus.Received), ...active.filter((r) => r.status !== JobStatus.Received)].map((r) => Number(r.job_id));
}
