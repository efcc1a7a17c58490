/**
 * Comparing Dirigo with a peer in the same run: peer servers started as their own processes, rounds
 * interleaved (Dirigo, peer, Dirigo, peer, …) so that a machine whose load changes during the run weighs
 * on both alike, and each side summed up by the medians of its rounds: requests per second, requests per
 * CPU second of the server's processes (from /proc/<pid>/stat), and p50/p99 latencies.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import pg from 'pg';
import type { LoadResult } from './load.ts';
import { percentile } from './load.ts';
import { cpuSeconds } from './server.ts';
import { benchNodeFlags } from '../../test/helpers/serve-process.ts';

export interface PeerProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Runs a peer server script (bench/peers/servers/) in its own Node process and waits for its `listening <url>` line. */
export async function startPeerScript(script: string, args: string[]): Promise<PeerProcess> {
  const child = spawn(process.execPath, [...benchNodeFlags(), script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${script} did not start within 30 s: ${out}`)), 30000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout!.resume();
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code}: ${out}`));
    });
  });
  child.removeAllListeners('exit');
  return {
    url,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Resident set size of a process, from /proc/<pid>/status, in MB (and its peak). */
export function rssMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/**
 * The PostgreSQL backends serving a process's open connections to port 5432: their CPU is the database's
 * share of that process's work. The process's socket inodes (/proc/<pid>/fd) give its local ports
 * (/proc/net/tcp), and pg_stat_activity names the backend of each client port.
 */
export async function postgresBackends(pid: number, databaseUrl: string): Promise<number[]> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || !inodes.has(f[9]!)) continue;
      const [local, remote] = [f[1]!, f[2]!];
      if (parseInt(remote.split(':')[1]!, 16) === 5432) ports.push(parseInt(local.split(':')[1]!, 16));
    }
  }
  if (ports.length === 0) return [];
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_activity where client_port = any($1::int[])', [ports]);
    return rows.map((r) => r.pid);
  } finally {
    await client.end();
  }
}

const lastCpu = new Map<number, number>();

/**
 * CPU seconds used so far by a set of processes. One that has exited since it was named (a PostgreSQL
 * backend whose pooled connection idled out) counts with its last reading.
 */
export function cpuOf(pids: number[]): number {
  let sum = 0;
  for (const pid of pids) {
    try {
      lastCpu.set(pid, cpuSeconds(pid));
    } catch {
      // exited: its last reading stands
    }
    sum += lastCpu.get(pid) ?? 0;
  }
  return sum;
}

export interface Side {
  /** What is measured, e.g. "Dirigo GET /healthz". */
  name: string;
  /** The server's processes whose CPU counts (Slurm: slurmrestd and slurmctld). */
  pids: () => number[];
  /** One round: a load run of the round's length. */
  round: () => Promise<LoadResult>;
}

export interface SideSummary {
  name: string;
  perSecond: number;
  perCpuSecond: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
}

const median = (xs: number[]) => percentile(xs, 50);

/** `rounds` rounds of each side, interleaved; each side's figures are the medians of its rounds. */
export async function interleave(rounds: number, a: Side, b: Side): Promise<[SideSummary, SideSummary]> {
  const per: Record<'a' | 'b', { rate: number[]; perCpu: number[]; p50: number[]; p99: number[]; requests: number; errors: number }> = {
    a: { rate: [], perCpu: [], p50: [], p99: [], requests: 0, errors: 0 },
    b: { rate: [], perCpu: [], p50: [], p99: [], requests: 0, errors: 0 },
  };
  for (let r = 0; r < rounds; r++) {
    for (const [key, side] of [['a', a], ['b', b]] as const) {
      const pids = side.pids();
      const cpu0 = cpuOf(pids);
      const result = await side.round();
      const used = cpuOf(pids) - cpu0;
      const p = per[key];
      p.rate.push(result.perSecond);
      // /proc counts in hundredths of a second: a round far shorter than a second reads coarsely.
      p.perCpu.push(used > 0 ? result.requests / used : NaN);
      p.p50.push(percentile(result.latenciesMs, 50));
      p.p99.push(percentile(result.latenciesMs, 99));
      p.requests += result.requests;
      p.errors += result.errors;
    }
  }
  const sum = (side: Side, p: (typeof per)['a']): SideSummary => ({
    name: side.name,
    perSecond: median(p.rate),
    perCpuSecond: median(p.perCpu.filter((x) => !Number.isNaN(x))),
    p50: median(p.p50),
    p99: median(p.p99),
    requests: p.requests,
    errors: p.errors,
  });
  return [sum(a, per.a), sum(b, per.b)];
}

const n = (x: number) => (x >= 100 ? Math.round(x).toLocaleString('en') : x.toFixed(x >= 10 ? 1 : 2));
const describe = (s: SideSummary, unit: string) =>
  `${s.name}: ${n(s.perSecond)} ${unit}/s, ${n(s.perCpuSecond)} per CPU-s, p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms${s.errors ? `, ${s.errors} errors` : ''}`;

/**
 * Prints one row: both sides and the two ratios (rate, and per CPU second of the servers' processes).
 * The goal is judged on the per-CPU-second ratio: the load generator shares the machine, so the rate is
 * bounded by the client as well as by the server. Returns whether the goal is met; a row without a goal
 * (a comparison printed for context) is INFO and returns undefined.
 */
export function printRow(title: string, dirigo: SideSummary, peer: SideSummary, unit: string, goal?: number): boolean | undefined {
  const rate = dirigo.perSecond / peer.perSecond;
  const perCpu = dirigo.perCpuSecond / peer.perCpuSecond;
  const ok = goal === undefined ? undefined : perCpu >= goal && dirigo.errors === 0 && peer.errors === 0;
  // A peer that answered errors was not doing the work: no verdict.
  const verdict = peer.errors > 0 ? 'VOID' : ok === undefined ? 'INFO' : ok ? 'PASS' : 'MISS';
  process.stdout.write(
    `${verdict}  ${title}: ratio ${perCpu.toFixed(2)} per CPU-s${goal === undefined ? '' : ` (goal >= ${goal})`}, ${rate.toFixed(2)} in ${unit}/s\n` +
      `      ${describe(dirigo, unit)}\n      ${describe(peer, unit)}\n`,
  );
  return ok;
}
