/**
 * Fault injection: two instances on one PostgreSQL schema with a local, a Slurm and an agents
 * site take submissions while faults hit them: kill -9 of an instance (restarted), kill -9 of the agent
 * (restarted in its work directory), slurmctld stopped and started again, kills through the API, and
 * kill -9 of both instances at once (both restarted).
 * Afterwards every acknowledged job exists once and is final, no payload of the local and Slurm sites
 * ran to completion twice (nor started again without a reschedule), and every accepted kill stopped its
 * payload.
 *
 * With DIRIGO_FAULT_OWN_DIRS=1 each instance has its own local working and Slurm staging directories:
 * when both die, whichever comes back first cannot tell whether the other's runs ended and leaves them to
 * the other's restart (scheduler.adoptionGraceMs), which adopts them.
 *
 * Small by default (CI); `npm run test:faults` runs it longer (DIRIGO_FAULT_JOBS, default 150 there).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startCluster, type Cluster, type Instance } from '../helpers/cluster.ts';
import { startAgent, type AgentProcess } from '../agents/agent-process.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { dialects } from '../helpers/dialects.ts';
import { slurmUnavailable } from './slurm-available.ts';
import { processAlive } from '../jobs/helpers.ts';

const noSlurm = slurmUnavailable();
const ROOT = new URL('../../', import.meta.url).pathname;
const JOBS = Number(process.env.DIRIGO_FAULT_JOBS ?? 36);
const SITES = ['Local', 'Slurm', 'Pool'] as const;
const FINAL = ['Done', 'Failed', 'Killed'];
const OWN_DIRS = process.env.DIRIGO_FAULT_OWN_DIRS === '1';


async function startSlurm(): Promise<void> {
  const child = spawn('bash', [join(ROOT, 'scripts/slurm-dev.sh')], { stdio: 'ignore' });
  assert.equal(await new Promise<number | null>((r) => child.on('close', r)), 0, 'scripts/slurm-dev.sh could not bring Slurm back');
}

const postgres = (await dialects()).find((d) => d.dialect === 'postgres')!;

describe('fault injection: instances, an agent and slurmctld fail under load', { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : postgres.skip }, () => {
  let cluster: Cluster;
  let a: Instance;
  let b: Instance;
  let proxy: TcpProxy;
  let agent: AgentProcess;
  const agentDir = mkdtempSync(join(tmpdir(), 'dirigo-fault-agent-'));

  before(async () => {
    const work = mkdtempSync(join(tmpdir(), 'dirigo-fault-'));
    mkdirSync(join(work, 'local'));
    mkdirSync(join(work, 'slurm'));
    // Shared by default: any instance on this host adopts any run. DIRIGO_FAULT_OWN_DIRS=1: each instance's
    // own (the defaults, under its data directory), so only an instance's restart can adopt its runs.
    const dirs = OWN_DIRS ? { local: {}, slurm: {} } : { local: { workDir: join(work, 'local') }, slurm: { stagingDir: join(work, 'slurm') } };
    cluster = await startCluster({
      // The grace outlasts a restart here (a few seconds, more on a loaded machine).
      scheduler: { pollIntervalMs: 200, leaseMs: 3000, adoptionGraceMs: 120000, maxReschedules: 5 },
      sites: [
        // Its payloads write pid files and the completions log outside their working directory: no sandbox.
        { name: 'Local', type: 'local', slots: 4, isolation: 'none', ...dirs.local },
        { name: 'Slurm', type: 'slurm', partition: 'debug', commandTimeoutMs: 20000, ...dirs.slurm },
        { name: 'Pool', type: 'agents', heartbeatIntervalMs: 500, stalledAfterMs: 60000, failStalledAfterMs: 60000 },
      ],
    });
    [a, b] = [await cluster.start('a'), await cluster.start('b')];
    proxy = await startTcpProxy(a.url);
    agent = startAgent(proxy.url, cluster.pki, { site: 'Pool', slots: 4, workDir: agentDir });
  });
  after(async () => {
    await agent?.stop('SIGKILL');
    await proxy?.close();
    if (!/is UP/.test(execFileSync('scontrol', ['ping'], { encoding: 'utf8' }))) await startSlurm();
    await cluster?.close();
  });

  test('every acknowledged job exists once and ends; local and Slurm payloads complete at most once; kills land', { timeout: 600000 }, async () => {
    const completions = join(cluster.shared, 'completions');
    const starts = join(cluster.shared, 'starts');
    const live = () => [a, b].filter((i) => i.child.exitCode === null && i.child.signalCode === null);
    const tokens = new Map<string, string>();
    const token = async (i: Instance) => {
      let t = tokens.get(i.url);
      if (!t) tokens.set(i.url, (t = await cluster.token(i, 'alice')));
      return t;
    };
    const acknowledged = new Map<number, (typeof SITES)[number]>();
    const submit = async (manifest: Record<string, unknown>) => {
      for (;;) {
        // Both instances may be down at once: the client waits for one to come back, as a user's would.
        const up = live();
        const i = up[acknowledged.size % Math.max(1, up.length)];
        if (!i) {
          await sleep(200);
          continue;
        }
        const r = await cluster.request(i, '/jobs', { method: 'POST', token: await token(i).catch(() => ''), json: manifest }).catch(() => undefined);
        if (r?.status === 201) return r.json.jids[0] as number;
        await sleep(200);
      }
    };

    // Jobs that are killed through the API while they run: their payloads must stop.
    const doomed = new Map<number, { site: string; pidFile: string }>();
    for (const site of SITES) {
      const pidFile = join(cluster.shared, `doomed-${site}.pid`);
      const jid = await submit({ Executable: '/bin/sh', Arguments: `-c 'echo $$ > ${pidFile}; exec sleep 300'`, Sites: [site] });
      doomed.set(jid, { site, pidFile });
    }

    // The load, with the faults in the middle of it.
    const load = (async () => {
      for (let n = 0; n < JOBS; n++) {
        const site = SITES[n % SITES.length]!;
        const jid = await submit({ Executable: '/bin/sh', Arguments: `-c 'echo $DIRIGO_JOB_ID >> ${starts}; sleep 2; echo $DIRIGO_JOB_ID >> ${completions}'`, Sites: [site] });
        acknowledged.set(jid, site);
        await sleep(150);
      }
    })();
    await sleep(2000);
    a.child.kill('SIGKILL');
    await a.exited;
    await sleep(3000);
    a = await cluster.start('a');
    proxy.retarget(a.url);
    agent.child.kill('SIGKILL');
    await agent.exited;
    await sleep(1000);
    agent = startAgent(proxy.url, cluster.pki, { site: 'Pool', slots: 4, workDir: agentDir });
    execFileSync('kill', [readFileSync('/run/slurm-dirigo/slurmctld.pid', 'utf8').trim()]);
    // Kills accepted while slurmctld is down and right after the instance restarted.
    for (const [jid, { pidFile }] of doomed) {
      for (let i = 0; !existsSync(pidFile); i++) {
        assert.ok(i < 600, `the payload of job ${jid} never started`);
        await sleep(100);
      }
      const i = live()[0]!;
      const r = await cluster.request(i, `/jobs/${jid}`, { method: 'DELETE', token: await token(i) });
      assert.equal(r.status, 200, r.text);
    }
    await sleep(5000);
    await startSlurm();
    // Both instances at once: nobody holds anything until they are back, and they share what was held.
    a.child.kill('SIGKILL');
    b.child.kill('SIGKILL');
    await Promise.all([a.exited, b.exited]);
    await sleep(2000);
    [a, b] = await Promise.all([cluster.start('a'), cluster.start('b')]);
    proxy.retarget(a.url);
    await load;

    const all = [...acknowledged.keys(), ...doomed.keys()];
    const rows = await cluster.sql<{ job_id: string; status: string; site: string; reschedule_counter: number; minor_status: string }>(
      'select job_id, status, site, reschedule_counter, minor_status from jobs where job_id = any($1)', [all]);
    assert.equal(rows.length, all.length, 'every acknowledged job exists, once');
    for (const end = Date.now() + 240000; ; ) {
      const open = await cluster.sql<{ job_id: string; status: string; minor_status: string }>(
        `select job_id, status, minor_status from jobs where job_id = any($1) and (status not in ('Done', 'Failed', 'Killed') or minor_status like '%stopping its payload')`, [all]);
      if (open.length === 0) break;
      assert.ok(Date.now() < end, `not final: ${JSON.stringify(open.slice(0, 5))}`);
      await sleep(500);
    }
    const final = new Map((await cluster.sql<{ job_id: string; status: string; minor_status: string; reschedule_counter: number }>('select job_id, status, minor_status, reschedule_counter from jobs where job_id = any($1)', [all])).map((r) => [Number(r.job_id), r]));
    const completed = readFileSync(completions, 'utf8').trim().split('\n').map(Number);
    const started = readFileSync(starts, 'utf8').trim().split('\n').map(Number);
    for (const [jid, site] of acknowledged) {
      const job = final.get(jid)!;
      assert.ok(FINAL.includes(job.status), `job ${jid}: ${job.status}`);
      assert.equal(job.status, 'Done', `job ${jid} on ${site}: ${job.minor_status}`);
      const times = completed.filter((c) => c === jid).length;
      // A run starts again only after a reschedule (its earlier run known dead, or stopped).
      const runs = started.filter((c) => c === jid).length;
      if (site === 'Pool') assert.ok(times >= 1, `job ${jid} on Pool completed ${times} times`);
      else if (times !== 1 || runs > 1 + job.reschedule_counter) {
        const history = await cluster.sql<{ status: string; minor_status: string; source: string }>('select status, minor_status, source from job_status_history where job_id = $1 order by id', [jid]);
        assert.fail(`job ${jid} on ${site} started ${runs} times and completed ${times} times: ${history.map((h) => `${h.status} (${h.minor_status}) by ${h.source}`).join(' → ')}`);
      }
    }
    // Every payload here runs on this host, the Slurm node's too.
    for (const [jid, { site, pidFile }] of doomed) {
      assert.equal(final.get(jid)!.status, 'Killed');
      const pid = Number(readFileSync(pidFile, 'utf8'));
      for (let i = 0; processAlive(pid); i++) {
        assert.ok(i < 200, `the killed payload of job ${jid} on ${site} still runs`);
        await sleep(100);
      }
    }
  });
});
