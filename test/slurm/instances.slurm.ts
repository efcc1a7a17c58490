/**
 * Two `dirigo serve` processes on one PostgreSQL schema with the same Slurm site, against the real daemons: when the instance holding jobs in Slurm is killed with `kill -9`,
 * the other one adopts their batch jobs and follows them to Done in Slurm: each payload runs once.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import { startCluster, type Cluster, type Instance } from '../helpers/cluster.ts';
import { slurmUnavailable } from './slurm-available.ts';

const noSlurm = slurmUnavailable();

function slurmState(id: string): string {
  return execFileSync('squeue', ['--noheader', '--states=all', `--jobs=${id}`, '--format=%T'], { encoding: 'utf8' }).trim();
}

for (const { dialect, skip } of await dialects()) {
  const why = noSlurm ? `Slurm unavailable: ${noSlurm}` : dialect === 'sqlite' ? 'several instances share PostgreSQL' : skip;
  describe(`Slurm site with several instances (${dialect})`, { skip: why }, () => {
    let cluster: Cluster;
    let a: Instance;
    let b: Instance;

    before(async () => {
      cluster = await startCluster({
        scheduler: { pollIntervalMs: 200, leaseMs: 3000, maxReschedules: 2 },
        // One staging directory for both instances, as hosts running one site share it.
        sites: [{ name: 'Slurm', type: 'slurm', partition: 'debug', stagingDir: mkdtempSync(join(tmpdir(), 'dirigo-slurm-staging-')) }],
      });
      a = await cluster.start('a');
    });
    after(async () => cluster?.close());

    test('kill -9 of the instance holding Slurm jobs: the survivor adopts their batch jobs, which end Done, run once', { timeout: 120000 }, async () => {
      const token = await cluster.token(a, 'alice');
      const res = await cluster.request(a, '/jobs', { method: 'POST', token, json: Array.from({ length: 3 }, () => ({ Executable: '/bin/sh', Arguments: `-c 'sleep 15; echo ok'`, Sites: ['Slurm'] })) });
      assert.equal(res.status, 201, res.text);
      const jids = res.json.jids as number[];
      // Wait until a holds all three in Slurm.
      let first: Map<number, string>;
      for (const end = Date.now() + 60000; ; ) {
        const rows = await cluster.sql<{ job_id: number; executor_ref: string | null }>(`select job_id, executor_ref from jobs where job_id = any($1) and executor_ref like '%slurmId%' and status in ('Matched', 'Running')`, [jids]);
        if (rows.length === 3) {
          first = new Map(rows.map((r) => [Number(r.job_id), (JSON.parse(r.executor_ref!) as { slurmId: string }).slurmId]));
          break;
        }
        assert.ok(Date.now() < end, 'a took the jobs to Slurm');
        await new Promise((r) => setTimeout(r, 100));
      }
      b = await cluster.start('b');
      a.child.kill('SIGKILL');
      await a.exited;
      for (const jid of jids) {
        for (const end = Date.now() + 90000; ; ) {
          const job = (await cluster.request(b, `/jobs/${jid}`, { token })).json;
          if (['Done', 'Failed', 'Killed'].includes(job.Status)) {
            assert.equal(job.Status, 'Done', String(job.MinorStatus));
            assert.equal(job.RescheduleCounter, 0, 'adopted, not rescheduled');
            assert.ok((job.StatusHistory as { MinorStatus: string }[]).some((h) => /^Adopted \(its executor stopped renewing its lease\)/.test(h.MinorStatus)), JSON.stringify(job.StatusHistory));
            break;
          }
          assert.ok(Date.now() < end, `job ${jid} still ${job.Status} (${job.MinorStatus})`);
          await new Promise((r) => setTimeout(r, 200));
        }
      }
      const rows = await cluster.sql<{ job_id: number; executor_ref: string }>(`select job_id, executor_ref from jobs where job_id = any($1)`, [jids]);
      for (const r of rows) {
        const old = first.get(Number(r.job_id))!;
        const now = (JSON.parse(r.executor_ref) as { slurmId: string }).slurmId;
        assert.equal(now, old, 'the batch job the dead instance submitted is the one that ran');
        assert.equal(slurmState(old), 'COMPLETED');
      }
    });

    test('a batch job whose id was never recorded (the instance died right after sbatch) is found by its staging directory and adopted, not run again', { timeout: 120000 }, async () => {
      const token = await cluster.token(b, 'alice');
      const res = await cluster.request(b, '/jobs', { method: 'POST', token, json: { Executable: '/bin/sh', Arguments: `-c 'sleep 10; echo ok'`, Sites: ['Slurm'] } });
      assert.equal(res.status, 201, res.text);
      const [jid] = res.json.jids as number[];
      let ref: { slurmId: string; stage: string };
      for (const end = Date.now() + 60000; ; ) {
        const [row] = await cluster.sql<{ executor_ref: string | null }>(`select executor_ref from jobs where job_id = $1 and executor_ref like '%slurmId%'`, [jid]);
        if (row) {
          ref = JSON.parse(row.executor_ref!) as { slurmId: string; stage: string };
          break;
        }
        assert.ok(Date.now() < end, 'b submitted the job to Slurm');
        await new Promise((r) => setTimeout(r, 100));
      }
      const d = await cluster.start('d');
      b.child.kill('SIGKILL');
      await b.exited;
      // What the database holds when the process dies between sbatch's answer and the write of its id.
      await cluster.sql(`update jobs set executor_ref = $2 where job_id = $1`, [jid, JSON.stringify({ stage: ref.stage })]);
      for (const end = Date.now() + 90000; ; ) {
        const job = (await cluster.request(d, `/jobs/${jid}`, { token })).json;
        if (['Done', 'Failed', 'Killed'].includes(job.Status)) {
          assert.equal(job.Status, 'Done', String(job.MinorStatus));
          assert.equal(job.RescheduleCounter, 0, 'adopted, not rescheduled');
          assert.ok((job.StatusHistory as { MinorStatus: string }[]).some((h) => /^Adopted/.test(h.MinorStatus)), JSON.stringify(job.StatusHistory));
          break;
        }
        assert.ok(Date.now() < end, `job ${jid} still ${job.Status} (${job.MinorStatus})`);
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal(slurmState(ref.slurmId), 'COMPLETED', 'the batch job b submitted is the one that ran');
      b = d;
    });

    test('an instance that stalls past its lease (SIGSTOP) and wakes up lets the adopter follow the batch jobs instead of cancelling them', { timeout: 120000 }, async () => {
      const token = await cluster.token(b, 'alice');
      const res = await cluster.request(b, '/jobs', { method: 'POST', token, json: Array.from({ length: 2 }, () => ({ Executable: '/bin/sh', Arguments: `-c 'sleep 15; echo ok'`, Sites: ['Slurm'] })) });
      assert.equal(res.status, 201, res.text);
      const jids = res.json.jids as number[];
      const holders = async () => cluster.sql<{ executor_id: string; executor_ref: string | null }>(`select executor_id, executor_ref from jobs where job_id = any($1) and executor_ref is not null and status in ('Matched', 'Running')`, [jids]);
      for (const end = Date.now() + 60000; (await holders()).length < 2; ) {
        assert.ok(Date.now() < end, 'b took the jobs to Slurm');
        await new Promise((r) => setTimeout(r, 100));
      }
      const stalled = new Set((await holders()).map((r) => r.executor_id));
      const c = await cluster.start('c');
      b.child.kill('SIGSTOP');
      try {
        for (const end = Date.now() + 30000; (await holders()).some((r) => stalled.has(r.executor_id)); ) {
          assert.ok(Date.now() < end, 'c adopted the jobs of the stalled instance');
          await new Promise((r) => setTimeout(r, 200));
        }
      } finally {
        b.child.kill('SIGCONT');
      }
      for (const jid of jids) {
        for (const end = Date.now() + 90000; ; ) {
          const job = (await cluster.request(c, `/jobs/${jid}`, { token })).json;
          if (['Done', 'Failed', 'Killed'].includes(job.Status)) {
            assert.equal(job.Status, 'Done', String(job.MinorStatus));
            assert.equal(job.RescheduleCounter, 0, 'adopted, not rescheduled');
            break;
          }
          assert.ok(Date.now() < end, `job ${jid} still ${job.Status} (${job.MinorStatus})`);
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    });
  });
}
