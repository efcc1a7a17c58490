/**
 * Figure: trivial jobs through a Slurm site, from submission to Done, beside the same number submitted
 * directly with `sbatch` in the same run (the ratio is Dirigo's overhead over Slurm alone). Needs the
 * single-node Slurm of scripts/slurm-dev.sh and PostgreSQL; skipped with a message otherwise.
 * 200 jobs per phase, as the issue states (about two minutes on a 2-core machine); `--jobs N` for a quicker look.
 * Usage: node bench/scale/slurm.ts [--jobs N]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { postgresUnavailable } from '../../test/helpers/dialects.ts';
import { startCluster } from '../../test/helpers/cluster.ts';

const { values } = parseArgs({ options: { jobs: { type: 'string' }, full: { type: 'boolean' } } });
const N = values.full ? 200 : Number(values.jobs ?? 200);

function slurmMissing(): string | undefined {
  try {
    if (!/is UP/.test(execFileSync('scontrol', ['ping'], { encoding: 'utf8', timeout: 15000 }))) return 'slurmctld is down';
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'Slurm is not installed' : (err as Error).message.split('\n')[0];
  }
}

const missing = slurmMissing() ?? (await postgresUnavailable());
if (missing) {
  console.log(`scale-slurm: skipped (${missing}); run scripts/slurm-dev.sh (root) and start PostgreSQL`);
  process.exit(0);
}

const FINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'OUT_OF_MEMORY', 'NODE_FAIL', 'BOOT_FAIL', 'DEADLINE', 'PREEMPTED']);

/** Phase 1: the same trivial jobs straight to sbatch, one after another as the executor does, until all end. */
function direct(): { seconds: number; completed: number } {
  const dir = mkdtempSync(join(tmpdir(), 'dirigo-bench-sbatch-'));
  try {
    const script = join(dir, 'job.sh');
    writeFileSync(script, '#!/bin/bash\n/bin/true\n', { mode: 0o755 });
    const started = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < N; i++) {
      ids.push(execFileSync('sbatch', ['--parsable', '--export=NONE', '--nodes=1', '--ntasks=1', `--chdir=${dir}`, `--output=${join(dir, 'slurm-%j.out')}`, script], { encoding: 'utf8' }).trim().split(';')[0]!);
    }
    for (;;) {
      const out = execFileSync('squeue', ['--noheader', '--states=all', `--jobs=${ids.join(',')}`, '--format=%i|%T'], { encoding: 'utf8' });
      const states = out.trim().split('\n').map((l) => l.split('|')[1]);
      const ended = states.filter((s) => s && FINAL.has(s));
      if (ended.length >= N) return { seconds: (performance.now() - started) / 1000, completed: states.filter((s) => s === 'COMPLETED').length };
      execFileSync('sleep', ['0.2']);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const d = direct();
const cluster = await startCluster({ scheduler: { pollIntervalMs: 200 }, maxBulk: 1000, sites: [{ name: 'Slurm', type: 'slurm', partition: 'debug' }] });
try {
  const server = await cluster.start('a');
  const token = await cluster.token(server, 'alice');
  const started = performance.now();
  const res = await cluster.request(server, '/jobs', { method: 'POST', token, json: Array.from({ length: N }, (_, i) => ({ Executable: '/bin/true', JobName: `slurm-bench-${i}`, Sites: ['Slurm'] })) });
  if (res.status !== 201) throw new Error(`submission: ${res.status} ${res.text}`);
  let done = 0;
  let failed = 0;
  for (;;) {
    const count = async (status: string) => (await cluster.request(server, `/jobs?Status=${status}&maxJobs=1`, { token })).json.entries as number;
    [done, failed] = [await count('Done'), await count('Failed')];
    if (done + failed >= N) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const seconds = (performance.now() - started) / 1000;
  const viaDirigo = N / seconds;
  const viaSbatch = N / d.seconds;
  console.log(`scale-slurm (single-node Slurm from scripts/slurm-dev.sh, ${N} trivial jobs per phase, submission to end)`);
  console.log(`      direct sbatch  : ${viaSbatch.toFixed(2).padStart(7)} jobs/s  (${d.seconds.toFixed(1)} s, ${d.completed} COMPLETED)`);
  console.log(`      via Slurm site : ${viaDirigo.toFixed(2).padStart(7)} jobs/s  (${seconds.toFixed(1)} s, ${done} Done, ${failed} Failed; HTTPS submission, sbatch, batched squeue, output sandboxes)`);
  console.log(`FIGURE  Slurm site / direct sbatch (jobs/s, same run): ${(viaDirigo / viaSbatch).toFixed(2)} x  (the issue sets no target: the ratio shows Dirigo's overhead over Slurm alone)`);
} finally {
  await cluster.close();
}
