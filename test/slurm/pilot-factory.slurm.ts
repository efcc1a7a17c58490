/**
 * The pilot factory against the real daemons of scripts/slurm-dev.sh. Its parts, driven round by round
 * with harmless batch jobs: pilots submitted within the limits (kept PENDING with --begin), followed to
 * Waiting, revoked ones cancelled, Lost when their batch job ends without the agent's report (with their
 * output kept), a refused sbatch making a Failed pilot, a banned site getting none. End to end, with the
 * real agent in its pilot mode: 50 jobs run by factory pilots within the limits, a killed agent's pilot
 * Lost and its job run by another, scancel, revoke, a ban; then two `dirigo serve` instances on one
 * PostgreSQL database.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects, postgresUnavailable } from '../helpers/dialects.ts';
import { startCluster, type Cluster, type Instance } from '../helpers/cluster.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { startJobsService } from '../jobs/helpers.ts';
import { slurmUnavailable } from './slurm-available.ts';
import { JobEvents } from '../../src/jobs/index.ts';
import { ban, unban } from '../../src/sites/site-status.ts';
import { SiteFactory, type FactorySite } from '../../src/agents/factory/factory.ts';
import { SlurmBatch } from '../../src/agents/factory/slurm-batch.ts';
import { insertPilot, pilotById, setPilotState, type PilotRow } from '../../src/agents/pilots/store.ts';
import { PilotState } from '../../src/agents/pilots/states.ts';

const noSlurm = slurmUnavailable();
const quiet = { warn() {}, info() {} };

function squeue(id: string): { state: string; name: string; partition: string; limit: string } | undefined {
  const out = execFileSync('squeue', ['--noheader', '--states=all', `--jobs=${id}`, '--format=%T|%j|%P|%l'], { encoding: 'utf8' }).trim();
  const [state, name, partition, limit] = out.split('|');
  return state ? { state, name: name!, partition: partition!, limit: limit! } : undefined;
}

async function pilotsOf(svc: TestService, site: string): Promise<PilotRow[]> {
  return svc.ctx.db.selectFrom('pilots').selectAll().where('site', '=', site).orderBy('pilot_id').execute();
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 60000): Promise<T> {
  for (const end = Date.now() + ms; ; ) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    assert.ok(Date.now() < end, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

for (const { dialect, skip } of await dialects()) {
  describe(`pilot factory parts (${dialect})`, { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : skip }, () => {
    let svc: TestService;
    const submitted = new Set<string>();
    const factoryOf = (name: string) => {
      const site = svc.ctx.config.jobs.sites.find((s) => s.name === name) as FactorySite;
      const batch = new SlurmBatch(site.factory);
      // Every batch job the factory makes is remembered, to be cancelled whatever happens.
      const submit = batch.submit.bind(batch);
      batch.submit = async (script, job) => {
        const ref = await submit(script, job);
        submitted.add(ref);
        return ref;
      };
      return { factory: new SiteFactory(svc.ctx, new JobEvents(), site, batch, quiet), batch, site };
    };
    const factory = (name: string, extra: object) => ({ name, type: 'agents', factory: { type: 'slurm', owner: 'pilot', intervalMs: 3600000, commandTimeoutMs: 20000, ...extra } });

    before(async () => {
      svc = await startJobsService(dialect, {
        // The rounds are driven by the test: no duty runs.
        scheduler: { enabled: false },
        sites: [
          // Held an hour by --begin: PENDING for as long as the test needs.
          factory('Held', { partition: 'debug', maxWaiting: 2, maxPilots: 3, timeLimitSeconds: 600, sbatchOptions: ['--begin=now+1hour'] }),
          factory('Refused', { partition: 'no_such_partition' }),
          factory('Hand', { partition: 'debug' }),
          factory('Race', { partition: 'debug', maxWaiting: 3, maxPilots: 3, sbatchOptions: ['--begin=now+1hour'] }),
        ],
      });
      const alice = await svc.token('alice');
      for (const site of ['Held', 'Refused', 'Race']) {
        const res = await svc.request('/jobs', { method: 'POST', token: alice, json: Array.from({ length: 5 }, () => ({ Executable: '/bin/true', Sites: [site] })) });
        assert.equal(res.status, 201, res.text);
      }
    });
    let other: TestService | undefined;
    after(async () => {
      await other?.close();
      if (submitted.size > 0) execFileSync('scancel', [...submitted]);
      await svc?.close();
    });

    test('pilots are submitted within maxWaiting, with their resources, a private script holding their secret, and followed to Waiting', { timeout: 120000 }, async () => {
      const { factory: f, site } = factoryOf('Held');
      await f.round();
      let pilots = await pilotsOf(svc, 'Held');
      assert.equal(pilots.length, 2, 'maxWaiting');
      const root = join(svc.dataDir, site.factory.stagingDir);
      for (const p of pilots) {
        assert.equal(p.origin, 'factory');
        assert.equal(p.owner, 'pilot');
        assert.equal(p.resource, 'debug');
        assert.ok(p.batch_ref, 'its batch reference is recorded');
        const slurm = squeue(p.batch_ref!);
        assert.equal(slurm?.name, `dirigo-pilot-${p.pilot_id}`);
        assert.equal(slurm?.partition, 'debug');
        assert.equal(slurm?.limit, '10:00');
        const dir = join(root, String(p.pilot_id));
        assert.equal(statSync(dir).mode & 0o777, 0o700);
        const script = join(dir, 'pilot.sh');
        assert.equal(statSync(script).mode & 0o777, 0o700);
        const text = readFileSync(script, 'utf8');
        const secret = /^export DIRIGO_PILOT_SECRET='([A-Za-z0-9_-]{43})'$/m.exec(text)?.[1];
        assert.ok(secret, text);
        assert.equal(createHash('sha256').update(secret).digest('hex'), p.secret_hash);
        assert.match(text, new RegExp(`'--pilot-id' '${p.pilot_id}' .*'--idle-timeout' '60' '--resource' 'debug'`));
        assert.match(text, /'--cpu-time' '540'/);
      }
      // Followed: PENDING is Waiting. The limits hold: no more while two are queued.
      await f.round();
      pilots = await pilotsOf(svc, 'Held');
      assert.equal(pilots.length, 2);
      assert.deepEqual(pilots.map((p) => p.state), ['Waiting', 'Waiting']);
      assert.match(pilots[0]!.reason, /queued in the batch system \(batch job \d+: BeginTime\)/);
    });

    test('a revoked pilot has its batch job cancelled, its output read and its directory removed; another takes its place', { timeout: 120000 }, async () => {
      const { factory: f, site } = factoryOf('Held');
      const [first] = await pilotsOf(svc, 'Held');
      assert.ok(await setPilotState(svc.ctx.db, first!.pilot_id, PilotState.Aborted, 'revoked by the test'));
      await f.round();
      await until('its batch job cancelled', async () => squeue(first!.batch_ref!)?.state === 'CANCELLED');
      const pilots = await pilotsOf(svc, 'Held');
      // One queued left of two: one more, and the three the partition allows live now.
      assert.equal(pilots.filter((p) => p.state !== 'Aborted').length, 2);
      assert.equal(pilots.length, 3);
      await f.round();
      const ended = await pilotById(svc.ctx.db, first!.pilot_id);
      assert.equal(ended?.state, 'Aborted');
      assert.equal(ended?.log, '', 'it never ran: its output is empty');
      assert.equal(existsSync(join(svc.dataDir, site.factory.stagingDir, String(first!.pilot_id))), false);
      // maxPilots: 3 live would be allowed, but maxWaiting already holds.
      await f.round();
      assert.equal((await pilotsOf(svc, 'Held')).length, 3);
    });

    test('a banned site gets no pilot; once unbanned it does', { timeout: 120000 }, async () => {
      const { factory: f } = factoryOf('Held');
      await ban(svc.ctx.db, { site: 'Held', reason: 'test', by: 'admin' });
      for (const p of await pilotsOf(svc, 'Held')) await setPilotState(svc.ctx.db, p.pilot_id, PilotState.Aborted, 'cleared by the test');
      const before = (await pilotsOf(svc, 'Held')).length;
      await f.round();
      await f.round();
      assert.equal((await pilotsOf(svc, 'Held')).length, before, 'no pilot while banned');
      await unban(svc.ctx.db, { site: 'Held', reason: 'test', by: 'admin' });
      await f.round();
      assert.equal((await pilotsOf(svc, 'Held')).filter((p) => p.state !== 'Aborted').length, 2);
    });

    test("a refused sbatch makes the pilot Failed with Slurm's words, and the partition waits before the next try", { timeout: 120000 }, async () => {
      const { factory: f } = factoryOf('Refused');
      await f.round();
      let pilots = await pilotsOf(svc, 'Refused');
      assert.equal(pilots.length, 2);
      assert.deepEqual(pilots.map((p) => p.state), ['Failed', 'Failed']);
      assert.match(pilots[0]!.reason, /the batch system refused it: sbatch: .*invalid partition/i);
      assert.match(pilots[1]!.reason, /^not submitted: pilot \d+ was refused/);
      await f.round();
      pilots = await pilotsOf(svc, 'Refused');
      assert.equal(pilots.length, 2, 'no new try before the pause is over');
    });

    test("a pilot whose batch job ends without the agent's report is Lost, with Slurm's state, and its output kept", { timeout: 120000 }, async () => {
      const { factory: f, batch, site } = factoryOf('Hand');
      const root = join(svc.dataDir, site.factory.stagingDir);
      // Pilots made by hand, each with a harmless batch job: one cancelled outside Dirigo, one that just ends.
      const start = async (body: string) => {
        const pilotId = await insertPilot(svc.ctx.db, { site: 'Hand', resource: 'debug', origin: 'factory', owner: 'pilot', reason: 'test' });
        const dir = join(root, String(pilotId));
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        writeFileSync(join(dir, 'pilot.sh'), `#!/bin/bash\n${body}\n`, { mode: 0o700 });
        const ref = await batch.submit(join(dir, 'pilot.sh'), { name: `dirigo-pilot-${pilotId}`, dir, output: batch.outputPath(dir), partition: 'debug', cores: 1, gpus: 0, timeLimitSeconds: 120, extra: [] });
        await svc.ctx.db.updateTable('pilots').set({ batch_ref: ref }).where('pilot_id', '=', pilotId).execute();
        return { pilotId, ref, dir };
      };
      const cancelled = await start('echo started; sleep 100');
      const ends = await start('echo short run; exit 3');
      await until('the first one running', async () => squeue(cancelled.ref)?.state === 'RUNNING' && existsSync(join(cancelled.dir, 'pilot.log')) && readFileSync(join(cancelled.dir, 'pilot.log'), 'utf8').includes('started'));
      await f.follow();
      assert.equal((await pilotById(svc.ctx.db, cancelled.pilotId))?.state, 'Running');
      execFileSync('scancel', [cancelled.ref]);
      await until('both ended in Slurm', async () => ['CANCELLED', 'COMPLETED'].includes(squeue(cancelled.ref)?.state ?? '') && squeue(ends.ref)?.state === 'FAILED');
      await f.follow();
      const a = await pilotById(svc.ctx.db, cancelled.pilotId);
      assert.equal(a?.state, 'Lost');
      assert.match(a!.reason, new RegExp(`batch job ${cancelled.ref} ended CANCELLED.* without the agent's final report`));
      assert.match(a!.log ?? '', /started/);
      assert.ok(a!.ended_at);
      const b = await pilotById(svc.ctx.db, ends.pilotId);
      assert.equal(b?.state, 'Lost');
      assert.match(b!.reason, /ended FAILED/);
      assert.equal(b!.log, 'short run\n');
      assert.equal(existsSync(cancelled.dir), false);
      assert.equal(existsSync(ends.dir), false);
    });

    test('two instances deciding at once never pass the limits (the site lock)', { skip: dialect === 'sqlite' && 'several instances share PostgreSQL', timeout: 120000 }, async () => {
      other = await startTestService({ dialect, sharing: svc, config: { jobs: svc.ctx.config.jobs } });
      const here = factoryOf('Race');
      const there = new SiteFactory(other.ctx, new JobEvents(), here.site, here.batch, quiet);
      for (let i = 0; i < 4; i++) {
        await Promise.all([here.factory.supply('debug'), there.supply('debug')]);
        const live = (await pilotsOf(svc, 'Race')).filter((p) => p.state !== 'Aborted');
        assert.equal(live.length, 3, `round ${i}: ${live.length} pilots live where 3 are allowed`);
        // One ends: the next round may replace it, once.
        await setPilotState(svc.ctx.db, live[0]!.pilot_id, PilotState.Aborted, 'ended by the test');
      }
      await here.factory.follow();
    });

    test('a row whose sbatch never answered is found again by its name and directory, or Failed', { timeout: 60000 }, async () => {
      const { factory: f } = factoryOf('Hand');
      const pilotId = await insertPilot(svc.ctx.db, { site: 'Hand', resource: 'debug', origin: 'factory', owner: 'pilot', reason: 'test' });
      await svc.ctx.db.updateTable('pilots').set({ submitted_at: new Date(Date.now() - 3600_000).toISOString() }).where('pilot_id', '=', pilotId).execute();
      await f.follow();
      const p = await pilotById(svc.ctx.db, pilotId);
      assert.equal(p?.state, 'Failed');
      assert.match(p!.reason, /never answered/);
      // One whose batch job exists: its reference is recorded.
      const { batch, site } = factoryOf('Hand');
      const found = await insertPilot(svc.ctx.db, { site: 'Hand', resource: 'debug', origin: 'factory', owner: 'pilot', reason: 'test' });
      await svc.ctx.db.updateTable('pilots').set({ submitted_at: new Date(Date.now() - 3600_000).toISOString() }).where('pilot_id', '=', found).execute();
      const dir = join(svc.dataDir, site.factory.stagingDir, String(found));
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileSync(join(dir, 'pilot.sh'), '#!/bin/bash\nsleep 1\n', { mode: 0o700 });
      const ref = await batch.submit(join(dir, 'pilot.sh'), { name: `dirigo-pilot-${found}`, dir, output: batch.outputPath(dir), partition: 'debug', cores: 1, gpus: 0, timeLimitSeconds: 60, extra: [] });
      await f.follow();
      assert.equal((await pilotById(svc.ctx.db, found))?.batch_ref, ref);
    });
  });
}

/** Pilots of `site` per state, as the registry has them now. */
async function pilotStates(db: TestService['ctx']['db'], site: string): Promise<Map<string, number>> {
  const rows = await db.selectFrom('pilots').select(['state']).where('site', '=', site).execute();
  const out = new Map<string, number>();
  for (const r of rows) out.set(r.state, (out.get(r.state) ?? 0) + 1);
  return out;
}

/** The pilots that took `jid`, oldest first. */
async function pilotsOfJob(db: TestService['ctx']['db'], jid: number): Promise<PilotRow[]> {
  return db.selectFrom('pilots').innerJoin('pilot_jobs', 'pilot_jobs.pilot_id', 'pilots.pilot_id').selectAll('pilots').where('pilot_jobs.job_id', '=', jid).orderBy('pilot_jobs.taken_at').execute();
}

/** Samples the registry until stopped: the most pilots live and queued at once. */
function sampleLimits(db: TestService['ctx']['db'], site: string): { stop(): Promise<{ live: number; queued: number; samples: number }> } {
  let live = 0;
  let queued = 0;
  let samples = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const s = await pilotStates(db, site);
      const q = (s.get('Submitted') ?? 0) + (s.get('Waiting') ?? 0);
      live = Math.max(live, q + (s.get('Running') ?? 0));
      queued = Math.max(queued, q);
      samples++;
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { live, queued, samples };
    },
  };
}

for (const { dialect, skip } of await dialects()) {
  describe(`pilot factory end to end (${dialect})`, { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : skip }, () => {
    let svc: TestService;
    let alice: string;
    const marks = mkdtempSync(join(tmpdir(), 'pilot-marks-'));
    before(async () => {
      svc = await startJobsService(dialect, {
        scheduler: { pollIntervalMs: 200 },
        sites: [
          {
            name: 'Pool',
            type: 'agents',
            heartbeatIntervalMs: 1000,
            factory: { type: 'slurm', owner: 'pilot', partition: 'debug', maxWaiting: 2, maxPilots: 3, slots: 1, cores: 1, timeLimitSeconds: 600, idleTimeoutSeconds: 4, intervalMs: 500 },
          },
        ],
      });
      alice = await svc.token('alice');
    });
    after(async () => {
      // Whatever is left of ours in Slurm goes.
      const refs = (await svc.ctx.db.selectFrom('pilots').select('batch_ref').where('batch_ref', 'is not', null).execute()).map((r) => r.batch_ref!);
      if (refs.length > 0) execFileSync('scancel', refs);
      await svc?.close();
    });

    const untilDone = async (jids: number[], ms: number) => {
      for (const end = Date.now() + ms; ; ) {
        const rows = await svc.ctx.db.selectFrom('jobs').select(['job_id', 'status']).where('job_id', 'in', jids).execute();
        const failed = rows.find((r) => ['Failed', 'Killed'].includes(r.status));
        assert.ok(!failed, `job ${failed?.job_id} ${failed?.status}`);
        if (rows.every((r) => r.status === 'Done')) return;
        if (Date.now() > end) {
          // What the jobs and the pilots say, to tell why.
          const stuck = rows.filter((r) => r.status !== 'Done').map((r) => r.job_id);
          const history = await svc.ctx.db.selectFrom('job_status_history').selectAll().where('job_id', 'in', stuck.slice(0, 3)).execute().catch(() => []);
          const pilots = await svc.ctx.db.selectFrom('pilots').select(['pilot_id', 'state', 'reason', 'agent_id']).execute();
          assert.fail(`jobs still ${[...new Set(rows.map((r) => r.status))].join(', ')}\n${JSON.stringify(history, null, 1)}\n${JSON.stringify(pilots)}`);
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    const untilPilotsEnded = async () =>
      until('every pilot ended, its output read', async () => {
        const rows = await svc.ctx.db.selectFrom('pilots').select(['state', 'log']).where('site', '=', 'Pool').execute();
        return rows.every((r) => ['Done', 'Failed', 'Aborted', 'Lost'].includes(r.state) && r.log !== null) ? rows : undefined;
      }, 90000);

    test('50 jobs and no agent started by hand: factory pilots run them all, within the limits, and end Done once the work is gone', { timeout: 240000 }, async () => {
      const sampler = sampleLimits(svc.ctx.db, 'Pool');
      const res = await svc.request('/jobs', { method: 'POST', token: alice, json: Array.from({ length: 50 }, (_, i) => ({ Executable: '/bin/echo', Arguments: `job ${i}`, Sites: ['Pool'] })) });
      assert.equal(res.status, 201, res.text);
      const jids = res.json.jids as number[];
      await untilDone(jids, 180000);
      const pilots = await untilPilotsEnded();
      const pilotIds = (await svc.ctx.db.selectFrom('pilots').select('pilot_id').where('site', '=', 'Pool').orderBy('pilot_id').execute()).map((r) => Number(r.pilot_id));
      const limits = await sampler.stop();
      assert.ok(limits.samples > 10);
      assert.ok(limits.live <= 3, `at most maxPilots live: saw ${limits.live}`);
      assert.ok(limits.queued <= 2, `at most maxWaiting queued: saw ${limits.queued}`);
      assert.ok(pilots.every((p) => p.state === 'Done'), JSON.stringify(pilots.map((p) => p.state)));
      for (const jid of jids) {
        const took = await pilotsOfJob(svc.ctx.db, jid);
        assert.equal(took.length, 1, `job ${jid} was taken once`);
        assert.equal(took[0]!.site, 'Pool');
        assert.equal(took[0]!.origin, 'factory');
        const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
        assert.equal(String(job.PilotReference), String(took[0]!.pilot_id));
      }
      // Every pilot's output was kept: its agent's own words.
      const logs = await svc.ctx.db.selectFrom('pilots').select('log').where('site', '=', 'Pool').execute();
      assert.ok(logs.some((l) => /agent/.test(l.log ?? '')), logs[0]?.log ?? '');
      // The registry shows it.
      const admin = await svc.token('admin', 'dirigo_admin');
      const shown = await svc.request(`/pilots/${pilotIds[0]}/logs`, { token: admin });
      assert.equal(shown.status, 200, shown.text);
      const stored = await pilotById(svc.ctx.db, pilotIds[0]!);
      assert.equal(shown.text, stored!.log);
    });

    /** Runs a job whose first run waits to be cut short (the run after its reschedule ends at once), cuts it short with `cut`, and returns what the pilot became. */
    const cutShort = async (name: string, cut: (pilot: PilotRow) => unknown): Promise<{ jid: number; first: PilotRow; ended: PilotRow }> => {
      const mark = join(marks, `${name}-${dialect}`);
      const jid = (await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/sh', Arguments: `-c "test -e ${mark} && exit 0; touch ${mark}; sleep 300"`, Sites: ['Pool'] } })).json.jids[0] as number;
      const first = await until('the job running in a pilot', async () => {
        const job = await svc.ctx.db.selectFrom('jobs').select('status').where('job_id', '=', jid).executeTakeFirst();
        const took = await pilotsOfJob(svc.ctx.db, jid);
        return job?.status === 'Running' && existsSync(mark) && took.length === 1 ? took[0] : undefined;
      }, 90000);
      await cut(first);
      const ended = await until('the pilot ended', async () => {
        const p = await pilotById(svc.ctx.db, first.pilot_id);
        return p && p.state !== 'Running' ? p : undefined;
      }, 90000);
      await untilDone([jid], 120000);
      const job = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
      assert.equal(job.RescheduleCounter, 1);
      const took = await pilotsOfJob(svc.ctx.db, jid);
      assert.equal(took.length, 2);
      assert.notEqual(took[1]!.pilot_id, first.pilot_id, 'another pilot ran it');
      assert.equal(String(job.PilotReference), String(took[1]!.pilot_id));
      return { jid, first, ended };
    };

    test("a pilot's agent killed outright (a node lost): the pilot is Lost with Slurm's state, its job rescheduled, then Done by another pilot", { timeout: 180000 }, async () => {
      // SIGUSR2, which the agent does not handle, ends it at once (scancel's KILL is a cancel: SIGTERM first).
      const { ended } = await cutShort('killed', (p) => execFileSync('scancel', ['--full', '--signal=USR2', p.batch_ref!]));
      assert.equal(ended.state, 'Lost', ended.reason);
      assert.match(ended.reason, /^batch job \d+ ended [A-Z_]+.* without the agent's final report$/);
      await untilPilotsEnded();
    });

    test("scancel of a running pilot's batch job: the pilot is Lost, its job given back and Done by another pilot", { timeout: 180000 }, async () => {
      const { ended } = await cutShort('cancelled', (p) => execFileSync('scancel', [p.batch_ref!]));
      // SIGTERM first: the agent gives its job back and sends no final report, so Slurm's word decides.
      assert.equal(ended.state, 'Lost', ended.reason);
      assert.match(ended.reason, /^batch job \d+ ended CANCELLED.* without the agent's final report$/);
      await untilPilotsEnded();
    });

    test('a revoked pilot is Aborted, the factory cancels its batch job, and its job is Done by another pilot', { timeout: 180000 }, async () => {
      const admin = await svc.token('admin', 'dirigo_admin');
      const { first, ended } = await cutShort('revoked', async (p) => {
        const res = await svc.request('/pilots/command', { method: 'POST', token: admin, json: { command: 'revoke', pilots: [p.pilot_id], reason: 'test' } });
        assert.equal(res.status, 200, res.text);
      });
      assert.equal(ended.state, 'Aborted');
      await until('its batch job cancelled', async () => squeue(first.batch_ref!)?.state === 'CANCELLED', 60000);
      await untilPilotsEnded();
    });

    test('a banned site gets no new pilot; lifted, its jobs run', { timeout: 180000 }, async () => {
      await untilPilotsEnded();
      await ban(svc.ctx.db, { site: 'Pool', reason: 'test', by: 'admin' });
      const before = (await svc.ctx.db.selectFrom('pilots').select('pilot_id').execute()).length;
      const jids = (await svc.request('/jobs', { method: 'POST', token: alice, json: Array.from({ length: 3 }, () => ({ Executable: '/bin/true', Sites: ['Pool'] })) })).json.jids as number[];
      // Several factory rounds (500 ms each) pass; none submits.
      await new Promise((r) => setTimeout(r, 4000));
      assert.equal((await svc.ctx.db.selectFrom('pilots').select('pilot_id').execute()).length, before);
      await unban(svc.ctx.db, { site: 'Pool', reason: 'test', by: 'admin' });
      await untilDone(jids, 120000);
      await untilPilotsEnded();
    });
  });
}

const noPostgres = await postgresUnavailable();
describe('pilot factory with two instances on one PostgreSQL database', { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : noPostgres ? `PostgreSQL unavailable: ${noPostgres}` : false }, () => {
  let cluster: Cluster;
  let a: Instance;
  let b: Instance;
  before(async () => {
    cluster = await startCluster({
      scheduler: { pollIntervalMs: 200, leaseMs: 3000 },
      sites: [
        {
          name: 'Pool',
          type: 'agents',
          heartbeatIntervalMs: 1000,
          // One staging directory for both, as hosts running one site share it.
          factory: { type: 'slurm', owner: 'pilot', partition: 'debug', maxWaiting: 2, maxPilots: 2, slots: 1, cores: 1, timeLimitSeconds: 600, idleTimeoutSeconds: 4, intervalMs: 300, stagingDir: mkdtempSync(join(tmpdir(), 'dirigo-pilot-staging-')) },
        },
      ],
    });
    a = await cluster.start('a');
    b = await cluster.start('b');
  });
  after(async () => {
    const refs = (await cluster.sql<{ batch_ref: string }>(`select batch_ref from pilots where batch_ref is not null`)).map((r) => r.batch_ref);
    if (refs.length > 0) execFileSync('scancel', refs);
    await cluster?.close();
  });

  test('20 jobs through either instance: the pilots never pass the limits, and run them all', { timeout: 240000 }, async () => {
    const token = await cluster.token(a, 'alice');
    let live = 0;
    let queued = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const rows = await cluster.sql<{ state: string; n: string }>(`select state, count(*) as n from pilots where site = 'Pool' group by state`);
        const n = (s: string) => Number(rows.find((r) => r.state === s)?.n ?? 0);
        queued = Math.max(queued, n('Submitted') + n('Waiting'));
        live = Math.max(live, n('Submitted') + n('Waiting') + n('Running'));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const jids: number[] = [];
    for (const instance of [a, b]) {
      const res = await cluster.request(instance, '/jobs', { method: 'POST', token, json: Array.from({ length: 10 }, () => ({ Executable: '/bin/true', Sites: ['Pool'] })) });
      assert.equal(res.status, 201, res.text);
      jids.push(...(res.json.jids as number[]));
    }
    for (const end = Date.now() + 180000; ; ) {
      const rows = await cluster.sql<{ status: string }>(`select status from jobs where job_id = any($1)`, [jids]);
      if (rows.every((r) => r.status === 'Done')) break;
      assert.ok(!rows.some((r) => ['Failed', 'Killed'].includes(r.status)), JSON.stringify(rows));
      assert.ok(Date.now() < end, `jobs still ${[...new Set(rows.map((r) => r.status))].join(', ')}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    sampling = false;
    await sampler;
    assert.ok(live <= 2, `at most maxPilots live: saw ${live}`);
    assert.ok(queued <= 2, `at most maxWaiting queued: saw ${queued}`);
    const took = await cluster.sql<{ n: string }>(`select count(distinct job_id) as n from pilot_jobs where job_id = any($1)`, [jids]);
    assert.equal(Number(took[0]!.n), 20);
  });
});
