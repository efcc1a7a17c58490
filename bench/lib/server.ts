/**
 * Starts `dirigo serve` as a separate process (so the load generator does not share its event loop) on
 * a fresh embedded-default data dir, optionally on PostgreSQL, and stops it afterwards.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchNodeFlags } from '../../test/helpers/serve-process.ts';

export interface BenchServer {
  url: string;
  dataDir: string;
  child: ChildProcess;
  ca: Buffer;
  user(name: string): { cert: Buffer; key: Buffer };
  stop(): Promise<void>;
}

const DIRIGO = join(import.meta.dirname, '..', '..', 'bin', 'dirigo.js');

export interface BenchServerOptions {
  env?: Record<string, string>;
  args?: string[];
  dataDir?: string;
  /**
   * Standard output (the log) goes to this file instead of a pipe to the bench: a production server logs
   * to a file or journald, and reading a pipe would cost the load generator's CPU, not the server's.
   */
  logFile?: string;
  /** CPUs the server may run on (`taskset -c`), to keep it off the load generator's core. */
  cpus?: string;
}

export async function startBenchServer(options: BenchServerOptions = {}): Promise<BenchServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'dirigo-bench-'));
  const logFd = options.logFile ? openSync(options.logFile, 'w') : undefined;
  const argv = [process.execPath, ...benchNodeFlags(), DIRIGO, 'serve', '--data-dir', dataDir, '--port', '0', ...(options.args ?? [])];
  // taskset execs the server: the child's pid is the server's.
  const [file, ...args] = options.cpus ? ['taskset', '-c', options.cpus, ...argv] : argv;
  const child = spawn(file!, args, {
    stdio: ['ignore', logFd ?? 'pipe', 'inherit'],
    env: { ...process.env, ...options.env },
  });
  if (logFd !== undefined) closeSync(logFd);
  const url = logFd !== undefined ? await urlFromLog(options.logFile!, child) : await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /Dirigo serving (https:\/\/\S+)/.exec(out);
      if (m && out.includes('API docs')) {
        // Keep draining stdout (request logs) so the server never blocks on a full pipe.
        child.stdout!.removeAllListeners('data');
        child.stdout!.resume();
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`dirigo serve exited with ${code}: ${out}`)));
  });
  const pki = join(dataDir, 'pki');
  return {
    url,
    dataDir,
    child,
    ca: readFileSync(join(pki, 'ca.crt')),
    user: (name) => ({ cert: readFileSync(join(pki, 'users', `${name}.crt`)), key: readFileSync(join(pki, 'users', `${name}.key`)) }),
    async stop() {
      child.removeAllListeners('exit');
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The URL `dirigo serve` prints once it listens, read from its log file. */
async function urlFromLog(file: string, child: ChildProcess): Promise<string> {
  for (const end = Date.now() + 60000; Date.now() < end; ) {
    const out = readFileSync(file, 'utf8');
    const m = /Dirigo serving (https:\/\/\S+)/.exec(out);
    if (m && out.includes('API docs')) return m[1]!;
    if (child.exitCode !== null) throw new Error(`dirigo serve exited with ${child.exitCode}: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('dirigo serve did not start within 60 s');
}

/** CPU seconds (user+system) used so far by a process, from /proc. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
