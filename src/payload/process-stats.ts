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
  const cpu = num(14) + num(15) + num(16) + num(17);
  return { pid, pgrp: num(5), cpuSeconds: cpu / clockTicks(), startTime: num(22) };
}

export async function readStat(pid: number): Promise<ProcStat | undefined> {
  try {
    return parseStat(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** CPU seconds per process group, for the groups asked about, in one pass over /proc. */
export async function groupCpuSeconds(groups: ReadonlySet<number>): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (groups.size === 0) return out;
  const entries = await readdir('/proc');
  await Promise.all(
    entries.map(async (name) => {
      if (!/^\d+$/.test(name)) return;
      const st = await readStat(Number(name));
      if (st && groups.has(st.pgrp)) out.set(st.pgrp, (out.get(st.pgrp) ?? 0) + st.cpuSeconds);
    }),
  );
  return out;
}
