/**
 * CPU time of process groups, for CPUTime limits. Read from Linux's /proc/<pid>/stat (proc(5)): for every
 * process of the group, utime + stime (its own) + cutime + cstime (its reaped children), in clock ticks.
 * Where /proc is missing the caller falls back to wall-clock time.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';

export const HAS_PROC = existsSync('/proc/self/stat');

let ticks: number | undefined;

/** `sysconf(_SC_CLK_TCK)` via getconf(1), 100 when unavailable (the Linux value on every common arch). */
export function clockTicks(): number {
  if (ticks === undefined) {
    const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    const n = Number(out.stdout?.trim());
    ticks = Number.isInteger(n) && n > 0 ? n : 100;
  }
  return ticks;
}

export interface ProcStat {
  pid: number;
  pgrp: number;
  /** Seconds of CPU used by the process and its reaped children. */
  cpuSeconds: number;
  /** The same, in user mode (utime + cutime) and in kernel mode (stime + cstime). */
  userSeconds: number;
  systemSeconds: number;
  /** Start time in clock ticks since boot: with the pid, identifies the process across pid reuse. */
  startTime: number;
}

/** Parses /proc/<pid>/stat; the command name may hold spaces and parentheses, so split after the last ')'. */
export function parseStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  if (close === -1) return undefined;
  const pid = Number(text.slice(0, text.indexOf(' ')));
  const f = text.slice(close + 2).split(' ');
  // f[0] is field 3 (state), so field n is f[n - 3].
  const num = (n: number) => Number(f[n - 3]);
  const user = num(14) + num(16);
  const system = num(15) + num(17);
  return { pid, pgrp: num(5), cpuSeconds: (user + system) / clockTicks(), userSeconds: user / clockTicks(), systemSeconds: system / clockTicks(), startTime: num(22) };
}

export async function readStat(pid: number): Promise<ProcStat | undefined> {
  try {
    return parseStat(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** What sampling sees of a process group: its CPU (as above) and its largest process's peak resident set (VmHWM, kB). */
export interface GroupUsage {
  userSeconds: number;
  systemSeconds: number;
  maxRssKb: number;
}

/**
 * CPU and peak memory per process group, in one pass over /proc: the measure of last resort for a run's
 * usage record (run-measure.ts), and CPUTime's measure (their sum).
 */
export async function groupUsage(groups: ReadonlySet<number>): Promise<Map<number, GroupUsage>> {
  const out = new Map<number, GroupUsage>();
  if (groups.size === 0) return out;
  const entries = await readdir('/proc');
  await Promise.all(
    entries.map(async (name) => {
      if (!/^\d+$/.test(name)) return;
      const st = await readStat(Number(name));
      if (!st || !groups.has(st.pgrp)) return;
      const status = await readFile(`/proc/${name}/status`, 'utf8').catch(() => '');
      const hwm = Number(/^VmHWM:\s*(\d+)\s*kB/m.exec(status)?.[1] ?? 0);
      const g = out.get(st.pgrp) ?? { userSeconds: 0, systemSeconds: 0, maxRssKb: 0 };
      g.userSeconds += st.userSeconds;
      g.systemSeconds += st.systemSeconds;
      g.maxRssKb = Math.max(g.maxRssKb, hwm);
      out.set(st.pgrp, g);
    }),
  );
  return out;
}
