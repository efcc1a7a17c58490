/**
 * `dirigo jobs why JID` (GET /jobs/{jid}/matching: where the job could run and what holds it back) and
 * `dirigo jobs shares` (GET /jobs/shares: each group's and user's target and actual share), as text.
 */
import type { paths } from '@dirigo/client';
import { formatTable, terminalWidth, type Colour } from '../../terminal/terminal.ts';

export type MatchingAnswer = paths['/jobs/{jid}/matching']['get']['responses'][200]['content']['application/json'];
export type SharesAnswer = paths['/jobs/shares']['get']['responses'][200]['content']['application/json'];

const percent = (x: number) => `${(x * 100).toFixed(1)} %`;

/** The requirements that ask for something (matching's normalised form; neutral values are left out). */
export function describeRequirements(req: Record<string, unknown>): string {
  const parts: string[] = [];
  const n = (k: string) => (typeof req[k] === 'number' ? (req[k] as number) : 0);
  const list = (k: string) => (Array.isArray(req[k]) ? (req[k] as unknown[]).map(String) : []);
  const [min, max] = [n('minProcessors'), n('maxProcessors')];
  if (min > 1 || max > 1) parts.push(`NumberOfProcessors ${min === max ? min : `${min}-${max}`}`);
  if (n('maxRamMb') > 0) parts.push(`MaxRAM ${n('maxRamMb')} MB`);
  if (n('gpus') > 0) parts.push(`NumberOfGPUs ${n('gpus')}`);
  if (list('tags').length > 0) parts.push(`Tags ${list('tags').join(', ')}`);
  if (list('platforms').length > 0) parts.push(`Platform ${list('platforms').join(' or ')}`);
  if (n('cpuTime') > 0) parts.push(`CPUTime ${n('cpuTime')} s`);
  if (Array.isArray(req.sites)) parts.push(`Sites ${list('sites').join(', ')}`);
  if (list('bannedSites').length > 0) parts.push(`BannedSites ${list('bannedSites').join(', ')}`);
  return parts.length > 0 ? parts.join('; ') : 'none beyond a processor';
}

/** One row per resource, and one more per further hold-back, under Site, Resource, Kind, Eligible, Attribute and Why not. */
export function formatMatching(m: MatchingAnswer): string {
  const head = `Job ${m.JobID}: ${m.Status}${m.TaskQueueID === null ? '' : `, task queue ${m.TaskQueueID}`}\nRequirements: ${describeRequirements(m.requirements)}\n\n`;
  const rows = m.resources.flatMap((r) => {
    const first = [r.site, r.resource || '-', r.kind, r.eligible ? 'yes' : 'no'];
    if (r.holdBack.length === 0) return [[...first, '', '']];
    return r.holdBack.map((h, i) => [...(i === 0 ? first : ['', '', '', '']), h.attribute, h.reason]);
  });
  const colour = (i: number, cell: string): Colour | undefined => (i === 3 && cell === 'yes' ? 'green' : i === 3 && cell === 'no' ? 'red' : undefined);
  const table = m.resources.length === 0 ? 'No site, partition or agent class is configured or alive.\n' : formatTable(['Site', 'Resource', 'Kind', 'Eligible', 'Attribute', 'Why not'], rows, { width: terminalWidth(), colour });
  const s = m.share;
  const share = s
    ? `Share: group ${s.group} gets ${percent(s.groupActual)} of recent work for a target of ${percent(s.groupTarget)}; user ${s.user} ${percent(s.userActual)} of the group's for ${percent(s.userTarget)}; ${s.ahead} of the owner's jobs go first\n`
    : '';
  return `${head}${table}\n${share}${m.summary}\n`;
}

/** A half-life as people say it: 24 h, 90 min, 30 s. */
function duration(seconds: number): string {
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds >= 60 && seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** Groups, each followed by its users (indented), under Group / user, Share, Target, Actual, Waiting, Running. */
export function formatShares(s: SharesAnswer): string {
  if (s.groups.length === 0) return `No group has Waiting or recent work.\n`;
  const rows = s.groups.flatMap((g) => [
    [g.group, String(g.share), percent(g.target), percent(g.actual), String(g.waiting), String(g.running)],
    ...g.users.map((u) => [`  ${u.user}`, String(u.share), percent(u.target), percent(u.actual), String(u.waiting), String(u.running)]),
  ]);
  const table = formatTable(['Group / user', 'Share', 'Target', 'Actual', 'Waiting', 'Running'], rows, { width: terminalWidth() });
  return `${table}\nTarget and actual are fractions of recent work (a user's, of its group's); past usage counts half after ${duration(s.halfLifeSeconds)}.\n`;
}
