/**
 * How a local payload's consumption is measured (docs/accounting.md "Measurements"). Node cannot get a
 * child's rusage, so the payload is waited for by a tiny python3 program between the executor and the
 * payload (outside its sandbox): `os.wait4` gives the CPU user and system time of the whole tree it waited
 * for, its largest resident set, and the exact wait status. It is the tree's child subreaper (prctl):
 * bwrap leaves its PID namespace's init (the payload's waiter) unreaped, and orphans come to it too; it
 * reaps them with their figures for up to 2 s after the payload ended (one that lingers, unsandboxed, is
 * not waited for). The payload's status it passes on (the same signal re-raised, or the same exit code): the executor's
 * exit, signal, kill and CPUTime semantics are unchanged. It leads the payload's process group, so it
 * lets the group's SIGTERM/SIGINT/SIGHUP pass (the payload gets them as before) and is stopped only by
 * SIGKILL (a kill that had to wait out its grace period: no figures). The figures go to `<jobId>.usage`
 * in the site's workDir, which the sandboxed payload cannot write (only its own directory is writable),
 * not to stdout, which is the payload's.
 *
 * Alternatives weighed: the shell's `times` and GNU time(1) give the same rusage but would run inside the
 * sandbox (their output writable by the payload) and GNU time is often not installed; sampling /proc
 * misses what ran between samples and every process reaped by one outside the group. Where python3 is
 * missing, /proc sampling is the fallback (`groupUsage`, with the CPUTime check's sampling): CPU to the
 * last sample, max RSS from VmHWM; without /proc, no figures.
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunUsage } from './run-usage.ts';
import { PASSED_ENV } from './loader-environment.ts';

/**
 * The wrapper, run as `python3 -I -S -c MEASURE <usage file> <program> <args...>`. The loader variables of
 * a payload that runs without a sandbox reach it as JSON in PASSED_ENV (measuredEnvironment), which it sets
 * only for the program it starts: python3 itself is not steered by them (loader-environment.ts).
 */
const MEASURE = `
import os, signal, sys, json, resource, time
out, argv = sys.argv[1], sys.argv[2:]
try:
    import ctypes
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
except Exception:
    pass
def passed_on(signum, frame): pass
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP): signal.signal(s, passed_on)
pid = os.fork()
if pid == 0:
    try:
        env = dict(os.environ)
        env.update(json.loads(env.pop('${PASSED_ENV}', '{}')))
        os.execve(argv[0], argv, env)
    finally: os._exit(127)
used = [0.0, 0.0, 0]
def add(ru):
    used[0] += ru.ru_utime; used[1] += ru.ru_stime; used[2] = max(used[2], ru.ru_maxrss)
status = None
while status is None:
    try: p, st, ru = os.wait4(-1, 0)
    except ChildProcessError: break
    add(ru)
    if p == pid: status = st
deadline = time.monotonic() + 2
while time.monotonic() < deadline:
    try: p, st, ru = os.wait4(-1, os.WNOHANG)
    except ChildProcessError: break
    if p == 0: time.sleep(0.01)
    else: add(ru)
try:
    with open(out + '.tmp', 'w') as f:
        json.dump({'cpuUserSeconds': used[0], 'cpuSystemSeconds': used[1], 'maxRssKb': used[2]}, f)
    os.rename(out + '.tmp', out)
except OSError:
    pass
if status is None: os._exit(1)
if os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)
os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
`;

/** Where the figures of job `jobId` go: beside its working directory, not in it. */
export function usageFile(workDir: string, jobId: number): string {
  return join(workDir, `${jobId}.usage`);
}

/** The command line that runs `argv` measured, with python3 at `python`. */
export function measuredCommand(python: string, file: string, argv: readonly string[]): string[] {
  return [python, '-I', '-S', '-c', MEASURE, file, ...argv];
}

/** The wrapper's environment: `outside`, with `loader` passed on to the program it starts. */
export function measuredEnvironment(outside: Readonly<Record<string, string>>, loader: Readonly<Record<string, string>>): Record<string, string> {
  return Object.keys(loader).length === 0 ? { ...outside } : { ...outside, [PASSED_ENV]: JSON.stringify(loader) };
}

/** As the agents' report accepts (api-schemas.ts RunUsageBody): larger is a broken clock, not a measure. */
const MAX_SECONDS = 1e8;

/** Reads and removes the figures the wrapper left; undefined when there are none (SIGKILLed, no python3). */
export async function takeUsage(file: string): Promise<RunUsage | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  await rm(file, { force: true }).catch(() => {});
  if (text === undefined) return undefined;
  try {
    const u = JSON.parse(text) as Record<string, unknown>;
    const seconds = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 && v < MAX_SECONDS ? v : undefined);
    const user = seconds(u.cpuUserSeconds);
    const system = seconds(u.cpuSystemSeconds);
    if (user === undefined || system === undefined) return undefined;
    const rss = u.maxRssKb;
    return { cpuUserSeconds: user, cpuSystemSeconds: system, ...(typeof rss === 'number' && Number.isSafeInteger(rss) && rss > 0 ? { maxRssKb: rss } : {}) };
  } catch {
    return undefined;
  }
}
