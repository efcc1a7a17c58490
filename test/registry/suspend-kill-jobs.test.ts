/**
 * POST /registry/users/{name}/suspend with and without killJobs on every dialect, with the local
 * executor: a plain suspension lets a running job run to Done; killJobs kills the user's unfinished jobs
 * as a JobAdministrator kill would (the payload stops, the job ends Killed) and answers how many.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, testRegistry, type TestService } from '../helpers/service.ts';
import { submit, waitForStatus } from '../jobs/helpers.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`suspension and the user's jobs (${dialect})`, { skip }, () => {
    let svc: TestService;
    let registryAdmin: string;
    /** Reads every job (dirigo_admin has JobAdministrator): a suspended owner's own tokens stop working. */
    let jobsAdmin: string;
    before(async () => {
      const registry = testRegistry();
      svc = await startTestService({
        dialect,
        config: {
          registry: { ...registry, groups: [...registry.groups, { name: 'vo_admin', members: ['admin'], properties: ['Admin'] }] },
          jobs: { scheduler: { pollIntervalMs: 50, killGraceMs: 1000, cpuCheckIntervalMs: 100, leaseMs: 5000 }, sites: [{ name: 'Local', type: 'local', slots: 4 }] },
        },
      });
      registryAdmin = await svc.token('admin', 'vo_admin');
      jobsAdmin = await svc.token('admin', 'dirigo_admin');
    });
    after(() => svc?.close());

    const suspend = (user: string, body: unknown) => svc.request(`/registry/users/${user}/suspend`, { method: 'POST', token: registryAdmin, json: body });
    const reinstate = async (user: string) => assert.equal((await svc.request(`/registry/users/${user}/reinstate`, { method: 'POST', token: registryAdmin })).status, 200);

    it('without killJobs, a running job runs on to Done', async () => {
      const jid = await submit(svc, await svc.token('bob'), { Executable: '/bin/sleep', Arguments: '2' });
      await waitForStatus(svc, jobsAdmin, jid, ['Running']);
      const res = await suspend('bob', { reason: 'audit' });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual([res.json.status, res.json.killedJobs], ['suspended', 0]);
      assert.equal((await waitForStatus(svc, jobsAdmin, jid)).Status, 'Done');
      await reinstate('bob');
    });

    it("with killJobs, kills the user's unfinished jobs and no one else's, and says how many", async () => {
      const bob = await svc.token('bob');
      const running = await submit(svc, bob, { Executable: '/bin/sleep', Arguments: '60' });
      const done = await submit(svc, bob, { Executable: '/bin/true' });
      const alices = await submit(svc, await svc.token('alice'), { Executable: '/bin/sleep', Arguments: '2' });
      await waitForStatus(svc, jobsAdmin, running, ['Running']);
      await waitForStatus(svc, jobsAdmin, done);
      await waitForStatus(svc, jobsAdmin, alices, ['Running']);

      const res = await suspend('bob', { killJobs: true });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual([res.json.status, res.json.killedJobs], ['suspended', 1]);
      const killed = await waitForStatus(svc, jobsAdmin, running);
      assert.deepEqual([killed.Status, killed.MinorStatus], ['Killed', 'Killed by admin']);
      assert.equal((await waitForStatus(svc, jobsAdmin, done)).Status, 'Done');
      assert.equal((await waitForStatus(svc, jobsAdmin, alices)).Status, 'Done');
      await reinstate('bob');
    });

    it('refuses a killJobs that is not a boolean with 400', async () => {
      const res = await suspend('bob', { killJobs: 'yes' });
      assert.equal(res.status, 400, res.text);
      assert.match(res.text, /killJobs/);
    });
  });
}
