/**
 * Several API instances: two real `dirigo serve` processes on one PostgreSQL schema and one shared sandbox
 * directory serve the same users. Each job runs exactly once; tokens signed by one instance work on the
 * other; an instance killed with `kill -9` while it holds jobs has them recovered by the other; a kill and
 * a completion racing through two instances end in one valid state; the stall detector runs on one instance
 * at a time and moves to the survivor when its holder dies.
 *
 * Several instances need PostgreSQL (SQLite is the single-instance embedded default): the SQLite run is
 * skipped with that reason.
 */
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import { startCluster, type Cluster, type Instance } from '../helpers/cluster.ts';

const FINAL = ['Done', 'Failed', 'Killed'];

async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 30000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

for (const { dialect, skip } of await dialects()) {
  describe(`several instances on one database (${dialect})`, { skip: dialect === 'sqlite' ? 'several instances share PostgreSQL; SQLite is the single-instance embedded default' : skip }, () => {
    let cluster: Cluster;
    let a: Instance;
    let b: Instance;
    let aliceA: string;

    const job = async (inst: Instance, token: string, jid: number) => (await cluster.request(inst, `/jobs/${jid}`, { token })).json as Record<string, unknown> & { StatusHistory: { Status: string; MinorStatus: string }[] };
    const submit = async (inst: Instance, token: string, manifest: unknown): Promise<number[]> => {
      const res = await cluster.request(inst, '/jobs', { method: 'POST', token, json: manifest });
      assert.equal(res.status, 201, res.text);
      return res.json.jids as number[];
    };

    before(async () => {
      cluster = await startCluster({
        // The other instance (another data directory) takes a dead one's local runs over once the lease ran out.
        scheduler: { pollIntervalMs: 100, leaseMs: 3000, adoptionGraceMs: 0, killGraceMs: 500, maxReschedules: 2 },
        sites: [
          // Its payloads append to a log shared by both instances, outside their working directory: no sandbox.
          { name: 'Local', type: 'local', slots: 3, isolation: 'none' },
          { name: 'Pool', type: 'agents', heartbeatIntervalMs: 200, stalledAfterMs: 1000, failStalledAfterMs: 500 },
        ],
      });
      [a, b] = await Promise.all([cluster.start('a'), cluster.start('b')]);
      aliceA = await cluster.token(a, 'alice');
    });
    after(async () => cluster?.close());

    test('every job runs exactly once, whichever instance took the submission; tokens and sandboxes are shared', async () => {
      const aliceB = await cluster.token(b, 'alice');
      // A token signed by one instance is accepted by the other (shared signing keys).
      const cross = await cluster.request(b, '/jobs?maxJobs=1', { token: aliceA });
      assert.equal(cross.status, 200, cross.text);
      const log = join(cluster.shared, 'runs.log');
      const manifest = { Executable: '/bin/sh', Arguments: `-c 'echo $DIRIGO_JOB_ID >> ${log}; echo ran $DIRIGO_JOB_ID'`, Sites: ['Local'] };
      const ids: number[] = [];
      await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          ids.push(...(await submit(i % 2 ? a : b, i % 2 ? aliceA : aliceB, Array.from({ length: 4 }, () => manifest))));
        }),
      );
      assert.equal(ids.length, 40);
      await until('all 40 jobs to end', async () => {
        const res = await cluster.request(b, `/jobs?Status=Done&maxJobs=1`, { token: aliceB });
        return res.json.entries >= 40 || undefined;
      }, 60000);
      const runs = readFileSync(log, 'utf8').trim().split('\n').map(Number).sort((x, y) => x - y);
      assert.deepEqual(runs, [...ids].sort((x, y) => x - y), 'each job ran exactly once');
      const matched = await cluster.sql<{ job_id: number; n: string }>(`select job_id, count(*) as n from job_status_history where status = 'Matched' group by job_id having count(*) <> 1`);
      assert.deepEqual(matched, [], 'each job was matched exactly once');
      const holders = await cluster.sql<{ executor_id: string }>('select distinct executor_id from jobs where executor_id is not null');
      assert.equal(holders.length, 2, `both instances ran jobs: ${JSON.stringify(holders)}`);
      // An output sandbox written by one instance is served by the other.
      for (const inst of [a, b]) {
        const out = await cluster.request(inst, `/jobs/${ids[0]}/outputsandbox`, { token: aliceA });
        assert.equal(out.status, 200, out.text);
      }
    });

    test('a kill racing a completion through two instances ends in one valid state, never both', async () => {
      const pilot = await cluster.token(a, 'pilot', 'dirigo_pilot');
      const jids = await submit(a, aliceA, Array.from({ length: 20 }, () => ({ Executable: '/bin/true', Sites: ['Pool'] })));
      const m = await cluster.request(a, '/agents/match', { method: 'POST', token: pilot, json: { agentId: 'racer', site: 'Pool', slots: 20 } });
      assert.equal(m.status, 200, m.text);
      assert.equal(m.json.jobs.length, 20);
      for (const jid of jids) {
        assert.equal((await cluster.request(a, `/agents/jobs/${jid}/status`, { method: 'POST', token: pilot, json: { agentId: 'racer', status: 'Running' } })).status, 200);
      }
      // For each job at once: the agent's completion through A, the owner's kill through B.
      const results = await Promise.all(
        jids.map(async (jid) => {
          const [finish, kill] = await Promise.all([
            cluster.request(a, `/agents/jobs/${jid}/finish`, { method: 'POST', token: pilot, json: { agentId: 'racer', outcome: 'done', exitCode: 0, minorStatus: 'Execution Complete' } }),
            cluster.request(b, `/jobs/${jid}`, { method: 'DELETE', token: aliceA }),
          ]);
          return { jid, finish: finish.status, kill: kill.status };
        }),
      );
      for (const r of results) {
        const j = await job(b, aliceA, r.jid);
        const finals = j.StatusHistory.filter((h) => FINAL.includes(h.Status));
        assert.equal(finals.length, 1, `job ${r.jid}: one final status in ${JSON.stringify(j.StatusHistory.map((h) => h.Status))}`);
        if (j.Status === 'Done') assert.deepEqual([r.finish, r.kill], [200, 409], `job ${r.jid} Done: ${JSON.stringify(r)}`);
        else {
          assert.equal(j.Status, 'Killed');
          assert.equal(r.kill, 200);
          assert.equal(r.finish, 409, `job ${r.jid} Killed: ${JSON.stringify(r)}`);
        }
      }
    });

    test('an instance killed with kill -9 while holding jobs: the other recovers them and they run to Done', async () => {
      const c = await cluster.start('c');
      // All three instances match jobs (3 slots each); with more jobs than a and b have slots, c holds
      // some. The ones c holds when it dies are found by their holder id.
      const jids = await submit(c, aliceA, Array.from({ length: 12 }, () => ({ Executable: '/bin/sleep', Arguments: '2', Sites: ['Local'] })));
      let held: number[];
      try {
        held = await until('c to hold running jobs', async () => {
          const rows = await cluster.sql<{ job_id: number }>(`select job_id from jobs where executor_id like $1 and status = 'Running' and job_id = any($2)`, [`%:${c.child.pid}:%`, jids]);
          return rows.length > 0 ? rows.map((r) => Number(r.job_id)) : undefined;
        });
      } finally {
        c.child.kill('SIGKILL');
        await c.exited;
      }
      for (const jid of jids) {
        const j = await until(`job ${jid} to end`, async () => {
          const r = await job(a, aliceA, jid);
          return FINAL.includes(r.Status as string) ? r : undefined;
        }, 60000);
        assert.equal(j.Status, 'Done', `job ${jid}: ${j.MinorStatus}`);
      }
      for (const jid of held) {
        const j = await job(b, aliceA, jid);
        assert.equal(j.RescheduleCounter, 1, `job ${jid} was rescheduled once`);
        assert.ok(j.StatusHistory.some((h) => h.Status === 'Rescheduled' && /stopped renewing its lease/.test(h.MinorStatus)), JSON.stringify(j.StatusHistory));
      }
    });

    test('the stall detector runs on one instance at a time and moves to the survivor when its holder dies', async () => {
      const pilot = await cluster.token(a, 'pilot', 'dirigo_pilot');
      const duty = await until('the stall duty to be held', async () => (await cluster.sql<{ holder: string }>(`select holder from cluster_duties where name = 'agent-stalls'`))[0]);
      const holderPid = Number(duty.holder.split(':')[1]);
      assert.ok([a.child.pid, b.child.pid].includes(holderPid), `held by a or b: ${duty.holder}`);
      const stallOne = async (via: Instance) => {
        const [jid] = await submit(via, aliceA, { Executable: '/bin/true', Sites: ['Pool'] });
        const m = await cluster.request(via, '/agents/match', { method: 'POST', token: pilot, json: { agentId: `silent-${jid}`, site: 'Pool', slots: 1 } });
        assert.deepEqual(m.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
        assert.equal((await cluster.request(via, `/agents/jobs/${jid}/status`, { method: 'POST', token: pilot, json: { agentId: `silent-${jid}`, status: 'Running' } })).status, 200);
        // No heartbeat follows: Stalled, then Failed, then rescheduled to Waiting.
        const j = await until(`job ${jid} to be rescheduled`, async () => {
          const r = await job(via, aliceA, jid!);
          return r.Status === 'Waiting' && r.RescheduleCounter === 1 ? r : undefined;
        });
        const statuses = j.StatusHistory.map((h) => h.Status);
        assert.deepEqual(statuses.filter((s) => s === 'Stalled'), ['Stalled'], 'detected once, not once per instance');
        assert.deepEqual(statuses.filter((s) => s === 'Failed'), ['Failed']);
        // Do not leave it for the Local site of the instances.
        await cluster.request(via, `/jobs/${jid}`, { method: 'DELETE', token: aliceA });
      };
      await stallOne(a);
      const [holder, survivor] = holderPid === a.child.pid ? [a, b] : [b, a];
      holder.child.kill('SIGKILL');
      await holder.exited;
      await stallOne(survivor);
      const now = (await cluster.sql<{ holder: string }>(`select holder from cluster_duties where name = 'agent-stalls'`))[0]!;
      assert.equal(Number(now.holder.split(':')[1]), survivor.child.pid, 'the survivor took the duty over');
      assert.ok(existsSync(cluster.shared));
    });
  });
}
