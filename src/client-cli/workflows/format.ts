/**
 * `dirigo workflow` as text: a submission's nodes and job ids, the list, one workflow's nodes with their
 * jobs' counts per status, and the answers of kill, hold and release.
 */
import type { paths } from '@dirigo/client';
import { formatTable, paint, terminalWidth } from '../../terminal/terminal.ts';
import { ALL_STATUSES } from '../../protocol/job-status.ts';
import { statusColour } from '../jobs/status-colour.ts';
import type { ActionResult } from '../jobs/action-results.ts';

export type Submitted = paths['/workflows']['post']['responses'][201]['content']['application/json'];
export type WorkflowList = paths['/workflows']['get']['responses'][200]['content']['application/json'];
export type Workflow = paths['/workflows/{wid}']['get']['responses'][200]['content']['application/json'];

/** Job ids as runs: `101, 102, 103, 107` → `101-103, 107` (a parametric node's jobs have consecutive ids). */
export function idRanges(ids: readonly number[]): string {
  const sorted = [...ids].sort((a, b) => a - b);
  const runs: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    runs.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return runs.join(', ');
}

export function formatSubmitted(s: Submitted): string {
  const rows = Object.entries(s.Nodes).map(([node, ids]) => [node, String(ids.length), idRanges(ids)]);
  return `WorkflowID ${s.WorkflowID}\n${formatTable(['NODE', 'JOBS', 'JOB IDS'], rows, { width: terminalWidth() })}${s.JobIDs.length} job(s)\n`;
}

/** `Done 3, Running 2`, in the order of the state machine; coloured outside tables (a table pads what it colours). */
function counts(c: Record<string, number>, coloured = false): string {
  return ALL_STATUSES.filter((s) => (c[s] ?? 0) > 0)
    .map((s) => `${coloured ? paint(s, statusColour(s)) : s} ${c[s]}`)
    .join(', ');
}

/** A workflow's Status: Active as a running job, Done, Failed and Killed as the job statuses. */
const workflowColour = (status: string) => (status === 'Active' ? 'blue' : statusColour(status));

const time = (iso: string) => iso.slice(0, 19).replace('T', ' ');

export function formatList(list: WorkflowList): string {
  const rows = list.Workflows.map((w) => [String(w.WorkflowID), w.Name, w.Kind, w.Owner, String(w.Jobs), w.Status, time(w.SubmissionTime), counts(w.Counts)]);
  const table = formatTable(['ID', 'NAME', 'KIND', 'OWNER', 'JOBS', 'STATUS', 'SUBMITTED', 'COUNTS'], rows, {
    width: terminalWidth(),
    colour: (i, cell) => (i === 5 ? workflowColour(cell) : undefined),
  });
  return `${table}${list.Workflows.length} workflow(s)\n`;
}

/** The statuses some job of the workflow has, in the state machine's order: the columns of the node table. */
function statusColumns(w: Workflow): string[] {
  return ALL_STATUSES.filter((s) => w.Nodes.some((n) => (n.Counts[s] ?? 0) > 0));
}

/** Why a node's Received jobs are not Waiting: `Dependency 10`, `Held 1`. */
function holdReasons(w: Workflow, node: string): string {
  const reasons = new Map<string, number>();
  for (const j of w.Jobs) if (j.Node === node && j.HoldReason) reasons.set(j.HoldReason, (reasons.get(j.HoldReason) ?? 0) + 1);
  return [...reasons].map(([r, n]) => `${r} ${n}`).join(', ');
}

/** `Active: 5 job(s); Done 1, Running 2, Received 2`. */
export function summaryLine(w: Workflow): string {
  return `${paint(w.Status, workflowColour(w.Status))}: ${w.Jobs.length} job(s); ${counts(w.Counts, true)}`;
}

/** The head (who, when, MaxRunning), one row per node with its jobs' counts per status, and with `jobs` every job. */
export function formatWorkflow(w: Workflow, options: { jobs: boolean }): string {
  const head = [
    `WorkflowID  ${w.WorkflowID}  ${w.Name} (${w.Kind})`,
    `Owner       ${w.Owner} (${w.OwnerGroup}), submitted ${time(w.SubmissionTime)}${w.MaxRunning === null ? '' : `, MaxRunning ${w.MaxRunning}`}`,
    `Status      ${summaryLine(w)}`,
  ];
  const columns = statusColumns(w);
  // HELD only while some job is held: most of a workflow's life, none is.
  const held = w.Jobs.some((j) => j.HoldReason !== '');
  const rows = w.Nodes.map((n) => [
    n.Name,
    n.DependsOn.length ? `${n.DependsOn.join(', ')} (${n.DependencyType})` : '-',
    String(n.JobIDs.length),
    ...columns.map((s) => String(n.Counts[s] ?? 0)),
    ...(held ? [holdReasons(w, n.Name)] : []),
  ]);
  const nodes = formatTable(['NODE', 'DEPENDS ON', 'JOBS', ...columns, ...(held ? ['HELD'] : [])], rows, { width: terminalWidth() });
  let text = `${head.join('\n')}\n\n${nodes}`;
  if (options.jobs) {
    const jobRows = w.Jobs.map((j) => [String(j.JobID), j.Node ?? '', j.Status, j.HoldReason, String(j.RetryCounter), j.Parents.join(', '), j.MinorStatus]);
    text += `\n${formatTable(['JOB', 'NODE', 'STATUS', 'HOLD', 'RETRIES', 'PARENTS', 'MINOR STATUS'], jobRows, { width: terminalWidth(), colour: (i, cell) => (i === 2 ? statusColour(cell) : undefined) })}`;
  }
  return text;
}

const PAST = { kill: 'killed', hold: 'held', release: 'released' } as const;

/**
 * What kill, hold or release did: `workflow 7: killed 3 job(s): 101-103`; a release says where the jobs
 * went, a line per status (`released 2 job(s), now Waiting: 5-6`), as some wait for their parents again.
 */
export function formatActed(wid: number, action: keyof typeof PAST, results: readonly ActionResult[]): string {
  const byStatus = new Map<string, number[]>();
  for (const r of results) if ('Status' in r) byStatus.set(r.Status, [...(byStatus.get(r.Status) ?? []), r.jid]);
  if (byStatus.size === 0) return `workflow ${wid}: no job to ${action}\n`;
  return [...byStatus].map(([status, ids]) => `workflow ${wid}: ${PAST[action]} ${ids.length} job(s)${action === 'release' ? `, now ${status}` : ''}: ${idRanges(ids)}\n`).join('');
}
