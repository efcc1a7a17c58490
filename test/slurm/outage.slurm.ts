/**
 * A Slurm outage, against the real daemons: slurmctld is stopped while Dirigo holds a running batch job.
 * Local jobs go on meanwhile (each site has its own loop), a kill accepted during the outage says it is
 * pending and reaches Slurm once the controller is back, and the running batch job is followed to Done.
 *
 * Stops and restarts slurmctld (scripts/slurm-dev.sh), so it runs in `npm run test:slurm`, one file at a time.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from '../jobs/helpers.ts';
import { slurmUnavailable } from './slurm-available.ts';

const noSlurm = slurmUnavailable();
const ROOT = new URL('../../', import.meta.url).pathname;
const CTLD_PID = '/run/slurm-dirigo/slurmctld.pid';

function controllerUp(): boolean {
  try {
    return /is UP/.test(execFileSync('scontrol', ['ping'], { encoding: 'utf8', timeout: 15000 }));
  } catch {
    return false;
  }
}

/** scripts/slurm-dev.sh starts what is not running and waits for the node; asynchronously, as the service runs here. */
async function startSlurm(): Promise<void> {
  const child = spawn('bash', [join(ROOT, 'scripts/slurm-dev.sh')], { stdio: 'ignore' });
  const code = await new Promise<number | null>((r) => child.on('close', r));
  assert.equal(code, 0, 'scripts/slurm-dev.sh could not bring Slurm back');
}

describe('a Slurm outage', { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : false }, () => {
  let svc: TestService;
  let alice: string;
  before(async () => {
    svc = await startJobsService('sqlite', {
      scheduler: { pollIntervalMs: 200, leaseMs: 3000 },
      sites: [
        { name: 'Local', type: 'local', slots: 2 },
        { name: 'Slurm', type: 'slurm', partition: 'debug', commandTimeoutMs: 20000 },
      ],
    });
    alice = await svc.token('alice');
  });
  after(async () => {
    if (!controllerUp()) await startSlurm();
    await svc?.close();
  });

  test('local jobs go on, a kill waits for the controller, and the running batch job ends Done', { timeout: 240000 }, async () => {
    const batch = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c 'sleep 20; echo survived'`, Sites: ['Slurm'] });
    const doomed = await submit(svc, alice, { Executable: '/bin/sleep', Arguments: '600', Sites: ['Slurm'] });
    await waitForStatus(svc, alice, batch, ['Running'], 60000);
    await waitForStatus(svc, alice, doomed, ['Running'], 60000);

    process.kill(Number(readFileSync(CTLD_PID, 'utf8')), 'SIGTERM');
    for (let i = 0; controllerUp(); i++) {
      assert.ok(i < 60, 'slurmctld did not stop');
      await sleep(250);
    }

    // The Slurm site's commands now wait on a controller that does not answer; the local site does not wait with them.
    const locals = await Promise.all([1, 2, 3].map(() => submit(svc, alice, { Executable: '/bin/true', Sites: ['Local'] })));
    for (const jid of locals) assert.equal((await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 60000)).Status, 'Done');
    const kill = await svc.request(`/jobs/${doomed}`, { method: 'DELETE', token: alice });
    assert.equal(kill.status, 200, kill.text);
    assert.equal(controllerUp(), false, 'all of this happened while slurmctld was down');
    const pending = (await svc.request(`/jobs/${doomed}`, { token: alice })).json;
    assert.equal(pending.Status, 'Killed');
    assert.match(String(pending.MinorStatus), /stopping its payload/);

    await startSlurm();
    const done = await waitForStatus(svc, alice, batch, ['Done', 'Failed', 'Killed'], 120000);
    assert.equal(done.Status, 'Done', String(done.MinorStatus));
    assert.equal(done.RescheduleCounter, 0);
    // The kill reached Slurm once it could, and stopped showing as pending.
    let killed = (await svc.request(`/jobs/${doomed}`, { token: alice })).json;
    for (let i = 0; /stopping its payload/.test(String(killed.MinorStatus)); i++) {
      assert.ok(i < 240, 'the kill was never delivered');
      await sleep(250);
      killed = (await svc.request(`/jobs/${doomed}`, { token: alice })).json;
    }
    const ref = (await svc.ctx.db.selectFrom('jobs').select('executor_ref').where('job_id', '=', doomed).executeTakeFirstOrThrow()).executor_ref!;
    const slurmId = (JSON.parse(ref) as { slurmId: string }).slurmId;
    const state = execFileSync('squeue', ['--noheader', '--states=all', `--jobs=${slurmId}`, '--format=%T'], { encoding: 'utf8' }).trim();
    assert.match(state, /CANCELLED|COMPLETING/);
  });
});
