/**
 * What ended Slurm batch jobs consumed, from `sacct` (docs/accounting.md "Measurements"): one call per poll
 * cycle for the jobs that ended in it, parsable output, every step. CPU is the allocation's UserCPU and
 * SystemCPU (Slurm sums its steps'), MaxRSS the largest of any step (the batch step's holds the
 * payload), Elapsed the wall time, Partition where it ran. Where accounting is off, the batch script's
 * own measure (bash `times` after it waited for the payload, slurm-script.ts) stands in, without MaxRSS.
 */
import type { RunUsage } from '../payload/run-usage.ts';

export const SACCT_USAGE_FORMAT = 'JobID,UserCPU,SystemCPU,MaxRSS,Elapsed,Partition';

/** What sacct said of one batch job. */
export interface SlurmUsage {
  usage: RunUsage;
  partition: string;
}

/**
 * Slurm's durations: `[DD-[HH:]]MM:SS[.mmm]` (UserCPU, SystemCPU, TotalCPU, Elapsed), also `HH:MM:SS`.
 * @returns seconds, or undefined for anything else (an empty field, `INVALID`, `UNLIMITED`).
 * @example parseSlurmDuration('1-02:03:04') // 93784
 */
export function parseSlurmDuration(text: string): number | undefined {
  const m = /^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m) return undefined;
  const [, days, hours, minutes, seconds, fraction] = m;
  // With days, hours are always given ("1-02:03:04"); "1-03:04" would be days-hours:minutes, which Slurm does not print for these fields.
  const total = Number(days ?? 0) * 86400 + Number(hours ?? 0) * 3600 + Number(minutes) * 60 + Number(seconds) + (fraction ? Number(`0.${fraction}`) : 0);
  return Number.isFinite(total) ? total : undefined;
}

const UNITS: Record<string, number> = { K: 1, M: 1024, G: 1024 ** 2, T: 1024 ** 3, P: 1024 ** 4 };

/** Slurm's memory figures (MaxRSS): a number with an optional unit K/M/G/T (bytes when none), in kB. */
export function parseSlurmMemoryKb(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)([KMGTP])?$/i.exec(text.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  return Math.round(m[2] ? n * UNITS[m[2].toUpperCase()]! : n / 1024);
}

/**
 * `sacct --parsable2 --noheader --format=JobID,UserCPU,SystemCPU,MaxRSS,Elapsed,Partition` for the jobs and
 * their steps (`123`, `123.batch`, `123.0`...): per job, the allocation's CPU, Elapsed and partition, and
 * the largest MaxRSS of its steps. Jobs whose allocation line is missing or unreadable are left out.
 */
export function parseSacctUsage(out: string, wanted: ReadonlySet<string>): Map<string, SlurmUsage> {
  const jobs = new Map<string, { user?: number; system?: number; wall?: number; partition: string; rss?: number }>();
  const entry = (id: string) => {
    let e = jobs.get(id);
    if (!e) jobs.set(id, (e = { partition: '' }));
    return e;
  };
  for (const line of out.split(/\r?\n/)) {
    const [jobId, user, system, rss, elapsed, partition] = line.trim().split('|');
    if (!jobId || elapsed === undefined) continue;
    const dot = jobId.indexOf('.');
    const id = dot === -1 ? jobId : jobId.slice(0, dot);
    if (!wanted.has(id)) continue;
    const e = entry(id);
    const kb = rss ? parseSlurmMemoryKb(rss) : undefined;
    if (kb !== undefined) e.rss = Math.max(e.rss ?? 0, kb);
    if (dot !== -1) continue;
    e.user = parseSlurmDuration(user ?? '');
    e.system = parseSlurmDuration(system ?? '');
    e.wall = parseSlurmDuration(elapsed);
    e.partition = (partition ?? '').trim();
  }
  const result = new Map<string, SlurmUsage>();
  for (const [id, e] of jobs) {
    if (e.user === undefined || e.system === undefined) continue;
    const usage: RunUsage = { cpuUserSeconds: e.user, cpuSystemSeconds: e.system };
    if (e.rss !== undefined && e.rss > 0) usage.maxRssKb = e.rss;
    if (e.wall !== undefined) usage.wallSeconds = e.wall;
    result.set(id, { usage, partition: e.partition });
  }
  return result;
}

/**
 * The batch script's own measure (`usage` in the staging directory): bash's `times` after the payload
 * ended, whose second line is the children's user and system time (`0m1.520s 0m0.010s`).
 */
export function parseTimesOutput(text: string): RunUsage | undefined {
  const line = text.trim().split(/\r?\n/)[1];
  const m = line ? /^(\d+)m(\d+(?:\.\d+)?)s\s+(\d+)m(\d+(?:\.\d+)?)s$/.exec(line.trim()) : null;
  if (!m) return undefined;
  return { cpuUserSeconds: Number(m[1]) * 60 + Number(m[2]), cpuSystemSeconds: Number(m[3]) * 60 + Number(m[4]) };
}
