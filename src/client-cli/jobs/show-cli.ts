/**
 * `dirigo jobs show JID` as text: the attributes, the parameters the job reported (as
 * dirac-wms-job-parameters lists them) and the status history (as dirac-wms-job-logging-info does);
 * a job of a workflow also its parents with their status, its children and its retries.
 */
import { formatTable, paint, terminalWidth } from '../../terminal/terminal.ts';
import { statusColour } from './status-colour.ts';
import type { paths } from '@dirigo/client';

/** A job as GET /jobs/{jid} answers it. */
export type JobDescription = paths['/jobs/{jid}']['get']['responses'][200]['content']['application/json'];

const HISTORY_COLUMNS = ['Status', 'MinorStatus', 'ApplicationStatus', 'StatusTime', 'Source'] as const;

/** The workflow fields (docs/workflows.md) as one line each, beside the attribute they explain. */
function workflowLines(job: JobDescription): Record<string, string> {
  const parents = job.Parents.map((p) => `${p.JobID} (${paint(p.Status, statusColour(p.Status))})`).join(', ');
  return {
    RetryCounter: `${job.RetryCounter ?? 0} of ${job.MaxRetries} (MaxRetries)`,
    WorkflowID: job.WorkflowID === null ? '' : job.WorkflowNode ? `${job.WorkflowID} (node ${job.WorkflowNode})` : String(job.WorkflowID),
    Parents: job.Parents.length === 0 ? '' : `${parents}; ${job.DependencyType ?? 'afterok'}`,
    Children: job.Children.join(', ') + (job.ChildrenCount > job.Children.length ? ` … (${job.ChildrenCount} in all)` : ''),
  };
}

export function formatJob(job: JobDescription): string {
  // Shown within the lines of workflowLines.
  const { StatusHistory, Parameters, MaxRetries: _m, WorkflowNode: _w, DependencyType: _d, ChildrenCount: _c, ...attrs } = job;
  const workflow = workflowLines(job);
  const lines = Object.entries(attrs).map(([k, v]) => {
    const text = k in workflow ? workflow[k]! : k === 'Status' ? paint(String(v), statusColour(String(v))) : String(v ?? '');
    return `${k.padEnd(18)} ${text}`.trimEnd();
  });
  const parameters = Object.entries(Parameters ?? {});
  // One `name = value` a line: a value may hold spaces, so columns would not read back unambiguously.
  lines.push('', 'Parameters:', ...(parameters.length === 0 ? ['  (none reported)'] : parameters.map(([name, value]) => `  ${name} = ${value}`)));
  const rows = StatusHistory.map((h) => HISTORY_COLUMNS.map((c) => h[c] ?? ''));
  const table = formatTable(HISTORY_COLUMNS, rows, { width: terminalWidth(), colour: (i, cell) => (i === 0 ? statusColour(cell) : undefined) });
  lines.push('', 'StatusHistory:', table.trimEnd());
  return `${lines.join('\n')}\n`;
}
