/**
 * `dirigo jobs show JID` as text: the attributes, the parameters the job reported (as
 * dirac-wms-job-parameters lists them) and the status history (as dirac-wms-job-logging-info does).
 */
import { formatTable, paint, terminalWidth } from '../../terminal/terminal.ts';
import { statusColour } from './status-colour.ts';
import type { paths } from '@dirigo/client';

/** A job as GET /jobs/{jid} answers it. */
export type JobDescription = paths['/jobs/{jid}']['get']['responses'][200]['content']['application/json'];

const HISTORY_COLUMNS = ['Status', 'MinorStatus', 'ApplicationStatus', 'StatusTime', 'Source'] as const;

export function formatJob(job: JobDescription): string {
  const { StatusHistory, Parameters, ...attrs } = job;
  const lines = Object.entries(attrs).map(([k, v]) => `${k.padEnd(18)} ${k === 'Status' ? paint(String(v), statusColour(String(v))) : (v ?? '')}`);
  const parameters = Object.entries(Parameters ?? {});
  // One `name = value` a line: a value may hold spaces, so columns would not read back unambiguously.
  lines.push('', 'Parameters:', ...(parameters.length === 0 ? ['  (none reported)'] : parameters.map(([name, value]) => `  ${name} = ${value}`)));
  const rows = StatusHistory.map((h) => HISTORY_COLUMNS.map((c) => h[c] ?? ''));
  const table = formatTable(HISTORY_COLUMNS, rows, { width: terminalWidth(), colour: (i, cell) => (i === 0 ? statusColour(cell) : undefined) });
  lines.push('', 'StatusHistory:', table.trimEnd());
  return `${lines.join('\n')}\n`;
}
