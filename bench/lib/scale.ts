/**
 * Pieces shared by the scale benches: CPU seconds of the PostgreSQL server processes (to show where a
 * bottleneck is), and a closed-loop request driver over several instances.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { request, type Agent, type Dispatcher } from 'undici';

function postgresProcesses(): Map<string, number> {
  const cpu = new Map<string, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (comm !== 'postgres') continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpu.set(`${entry}:${fields[19]}`, (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // the process ended meanwhile
    }
  }
  return cpu;
}

/**
 * A meter of the CPU seconds used by every `postgres` process (server and backends) since it was made.
 * Per process (pid and start time), so backends that come and go during the window are counted right.
 */
export function postgresCpuMeter(): () => number {
  const before = postgresProcesses();
  return () => {
    let total = 0;
    for (const [key, seconds] of postgresProcesses()) total += seconds - (before.get(key) ?? 0);
    return total;
  };
}

/** This process's own CPU seconds (the load generator). */
export function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

export interface DriveOptions {
  /** One entry per client: the base URL it talks to. */
  targets: string[];
  dispatcher: Agent;
  seconds: number;
  /** The request a client sends; `counted` says how many units a successful answer is worth. */
  next: (client: number) => { path: string; method: Dispatcher.HttpMethod; headers: Record<string, string>; body?: string };
  counted: (status: number, body: string) => number;
  /** Stops early when it returns true (e.g. nothing left to match). */
  exhausted?: () => boolean;
}

/** Closed loop: each client sends its next request when the previous answer arrives. @returns units per second. */
export async function drive(o: DriveOptions): Promise<{ perSecond: number; units: number; errors: number; seconds: number }> {
  let units = 0;
  let errors = 0;
  const end = Date.now() + o.seconds * 1000;
  const started = performance.now();
  await Promise.all(
    o.targets.map(async (base, client) => {
      while (Date.now() < end && !o.exhausted?.()) {
        const spec = o.next(client);
        try {
          const res = await request(base + spec.path, { method: spec.method, headers: spec.headers, body: spec.body, dispatcher: o.dispatcher });
          const n = o.counted(res.statusCode, await res.body.text());
          if (n < 0) errors++;
          else units += n;
        } catch {
          errors++;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { perSecond: units / seconds, units, errors, seconds };
}
