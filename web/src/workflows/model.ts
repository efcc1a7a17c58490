/** A workflow as GET /workflows and GET /workflows/{wid} answer it (docs/workflows.md), and its actions. */
import type { operations } from '@dirigo/client/schema';
import { api, unwrap } from '../api.ts';
import { STATUSES } from '../jobs/attributes.ts';

export type WorkflowSummary = operations['listWorkflows']['responses'][200]['content']['application/json']['Workflows'][number];
/** The summary with its nodes; `Jobs` is the list of its jobs here, not their count. */
export type WorkflowDetail = operations['getWorkflow']['responses'][200]['content']['application/json'];
export type WorkflowJob = WorkflowDetail['Jobs'][number];
export type WorkflowNode = WorkflowDetail['Nodes'][number];

export type WorkflowAction = 'kill' | 'hold' | 'release';

/** Counts by status in the job monitor's order of statuses (unknown ones last). */
export function orderedCounts(counts: Record<string, number>): { status: string; count: number }[] {
  const rank = (s: string) => {
    const i = (STATUSES as readonly string[]).indexOf(s);
    return i === -1 ? STATUSES.length : i;
  };
  return Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([status, count]) => ({ status, count }))
    .sort((a, b) => rank(a.status) - rank(b.status) || a.status.localeCompare(b.status));
}

/** How many of the jobs are in each status. */
export function countJobs(jobs: readonly WorkflowJob[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const j of jobs) counts[j.Status] = (counts[j.Status] ?? 0) + 1;
  return counts;
}

/** `Waiting 2 · Running 1 · Done 5`: the counts in words. */
export function countsText(counts: Record<string, number>): string {
  return orderedCounts(counts)
    .map((c) => `${c.status} ${c.count}`)
    .join(' · ');
}

/** A workflow's Status colour: as a job's, Active as Running. */
export function workflowColor(status: string): string {
  return status === 'Active' ? 'blue' : status === 'Done' ? 'green' : status === 'Failed' ? 'red' : 'gray';
}

export async function listWorkflows(): Promise<WorkflowSummary[]> {
  return unwrap(await api.GET('/workflows', { params: { query: { maxItems: 500 } } })).Workflows;
}

export async function getWorkflow(wid: number): Promise<WorkflowDetail> {
  return unwrap(await api.GET('/workflows/{wid}', { params: { path: { wid } } }));
}

/** Acts on every job of the workflow that has not ended; the server answers each job on its own. */
export async function actOnWorkflow(action: WorkflowAction, wid: number): Promise<{ done: number; refused: { jid: number; error_description: string }[] }> {
  const path = action === 'kill' ? '/workflows/{wid}/kill' : action === 'hold' ? '/workflows/{wid}/hold' : '/workflows/{wid}/release';
  const { results } = unwrap(await api.POST(path, { params: { path: { wid } } }));
  const refused = results.flatMap((r) => ('error' in r ? [{ jid: r.jid, error_description: r.error_description }] : []));
  return { done: results.length - refused.length, refused };
}
