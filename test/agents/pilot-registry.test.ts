/**
 * Issue 35, the pilot registry over HTTPS on each dialect: GET /pilots with its filters and pages, the
 * counts per site and state, one pilot with its jobs, its output (read when it ended, or the live file
 * of a running factory pilot) for its owner, SiteManager and JobAdministrator only; POST /pilots/command:
 * drain and stop set the command of pilots not ended, revoke makes a pilot Aborted and gives back the job
 * it held (rescheduled); 403 for plain users, 400 naming the problem for bad input.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { submit, waitForStatus } from '../jobs/helpers.ts';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { insertPilot, pilotById, recordPilotJobs } from '../../src/agents/pilots/store.ts';
import { pilotAgentId } from '../../src/agents/pilots/release.ts';
import { issuePilotToken } from '../../src/agents/pilots/tokens.ts';
import { insertPilots, STAGING, startPilotsService, type PilotFixture } from './pilot-fixture.ts';

const PILOT_KEYS = [
  'PilotID', 'Site', 'Resource', 'Origin', 'BatchReference', 'Owner', 'AgentID', 'State', 'Reason', 'Command', 'RevokedBy',
  'Slots', 'Cores', 'MemoryMB', 'GPUs', 'CPUTime', 'SubmittedAt', 'StartedAt', 'LastSeen', 'EndedAt', 'JobCount',
];

for (const { dialect, skip } of await dialects()) {
  describe(`the pilot registry over HTTPS (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    let carol: string;
    let admin: string;
    let pilot: string;
    let p: PilotFixture;
    before(async () => {
      svc = await startPilotsService(dialect);
      [alice, bob, carol, admin, pilot] = await Promise.all([svc.token('alice'), svc.token('bob', 'dirigo_sites'), svc.token('carol'), svc.token('admin', 'dirigo_admin'), svc.token('pilot', 'dirigo_pilot')]);
      p = await insertPilots(svc);
    });
    after(() => svc?.close());

    const get = (path: string, token = alice) => svc.request(path, { token });
    const ids = (res: { json: { pilots: { PilotID: number }[] } }) => res.json.pilots.map((x) => x.PilotID);
    const command = (token: string, json: unknown) => svc.request('/pilots/command', { method: 'POST', token, json });

    it('lists every pilot newest first, in the documented shape, to any user; 401 without a token', async () => {
      const res = await get('/pilots');
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.total, 6);
      assert.deepEqual(ids(res), [p.failed, p.live, p.done, p.waiting, p.carols, p.running]);
      const done = res.json.pilots.find((x: { PilotID: number }) => x.PilotID === p.done);
      assert.deepEqual(Object.keys(done), PILOT_KEYS);
      assert.equal(done.State, 'Done');
      assert.equal(done.Origin, 'factory');
      assert.equal(done.BatchReference, '1002');
      assert.equal(done.JobCount, 2);
      assert.match(done.SubmittedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.match(done.EndedAt, /Z$/);
      const running = res.json.pilots.find((x: { PilotID: number }) => x.PilotID === p.running);
      assert.deepEqual([running.AgentID, running.Slots, running.Cores, running.MemoryMB, running.CPUTime, running.JobCount, running.EndedAt], [`pilot-${p.running}`, 2, 2, 4000, 3600, 0, null]);
      assert.equal((await svc.request('/pilots')).status, 401);
    });

    it('filters by site, state (repeated), origin, owner, batch reference and job; pages with limit and offset', async () => {
      assert.deepEqual(ids(await get('/pilots?site=Pool')), [p.failed, p.carols, p.running]);
      assert.deepEqual(ids(await get('/pilots?state=Running')), [p.live, p.carols, p.running]);
      assert.deepEqual(ids(await get('/pilots?state=Running&state=Waiting&site=Batch')), [p.live, p.waiting]);
      assert.deepEqual(ids(await get('/pilots?origin=factory')), [p.live, p.done, p.waiting]);
      assert.deepEqual(ids(await get('/pilots?owner=carol')), [p.carols]);
      assert.deepEqual(ids(await get('/pilots?batchRef=1003')), [p.live]);
      assert.deepEqual(ids(await get('/pilots?job=8')), [p.done]);
      assert.deepEqual(ids(await get('/pilots?job=9')), []);
      const page = await get('/pilots?limit=2&offset=1');
      assert.deepEqual(ids(page), [p.live, p.done]);
      assert.equal(page.json.total, 6);
      const last = await get('/pilots?site=Pool&limit=2&offset=2');
      assert.deepEqual([ids(last), last.json.total], [[p.running], 3]);
    });

    it('answers 400 naming the problem for a bad filter', async () => {
      const bogus = await get('/pilots?state=Bogus');
      assert.equal(bogus.status, 400, bogus.text);
      assert.match(bogus.json.error_description, /state.* must be one of Submitted, Waiting, Running, Done, Failed, Aborted, Lost/);
      for (const q of ['limit=0', 'limit=1001', 'offset=-1', 'job=abc', 'job=0', 'origin=robot', 'site=a%20b', 'limit=1e3']) {
        const res = await get(`/pilots?${q}`);
        assert.equal(res.status, 400, `${q}: ${res.text}`);
        assert.equal(res.json.error, 'invalid_request');
      }
      assert.equal((await get('/pilots/summary?state=Nope')).status, 400);
    });

    it('counts pilots per site and state, with the filters', async () => {
      const res = await get('/pilots/summary');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        res.json.summary.map((r: { Site: string; State: string; Count: number }) => [r.Site, r.State, r.Count]),
        [
          ['Batch', 'Done', 1],
          ['Batch', 'Running', 1],
          ['Batch', 'Waiting', 1],
          ['Pool', 'Failed', 1],
          ['Pool', 'Running', 2],
        ],
      );
      const pool = await get('/pilots/summary?site=Pool&state=Running');
      assert.deepEqual(pool.json.summary, [{ Site: 'Pool', State: 'Running', Count: 2 }]);
    });

    it('shows one pilot with the jobs it took and their status; 404 for none, 400 for a bad id', async () => {
      // At Batch, whose factory sends no pilot: the job stays Waiting.
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Batch'] });
      await recordPilotJobs(svc.ctx.db, p.carols, [jid]);
      const res = await get(`/pilots/${p.carols}`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.json), [...PILOT_KEYS, 'Jobs']);
      assert.equal(res.json.Owner, 'carol');
      assert.equal(res.json.JobCount, 1);
      assert.deepEqual(res.json.Jobs.map((j: { JobID: number; Status: string }) => [j.JobID, j.Status]), [[jid, 'Waiting']]);
      assert.match(res.json.Jobs[0].TakenAt, /Z$/);
      const done = await get(`/pilots/${p.done}`);
      assert.deepEqual(done.json.Jobs.map((j: { JobID: number; Status: string | null }) => [j.JobID, j.Status]), [[7, null], [8, null]]);
      const none = await get('/pilots/999999');
      assert.equal(none.status, 404);
      assert.match(none.json.error_description, /no pilot 999999/);
      for (const bad of ['abc', '0', '1.5', '99999999999']) assert.equal((await get(`/pilots/${bad}`)).status, 400, bad);
    });

    it('serves the output to its owner, SiteManager and JobAdministrator only; 404 naming why when there is none', async () => {
      const ended = await get(`/pilots/${p.done}/logs`, admin);
      assert.equal(ended.status, 200, ended.text);
      assert.match(String(ended.headers['content-type']), /^text\/plain/);
      assert.equal(ended.text, 'pilot 1002 says goodbye\n');
      const live = await get(`/pilots/${p.live}/logs`, bob);
      assert.equal(live.status, 200, live.text);
      assert.equal(live.text, 'live output line 1\nlive output line 2\n');
      // The factory's owner (user pilot) reads its pilots' output.
      assert.equal((await get(`/pilots/${p.live}/logs`, pilot)).status, 200);

      const refused = await get(`/pilots/${p.done}/logs`, alice);
      assert.equal(refused.status, 403, refused.text);
      assert.match(refused.json.error_description, /only its owner and groups with JobAdministrator or SiteManager/);
      const manual = await get(`/pilots/${p.carols}/logs`, carol);
      assert.equal(manual.status, 404, manual.text);
      assert.match(manual.json.error_description, /started by hand/);
      const notYet = await get(`/pilots/${p.waiting}/logs`, admin);
      assert.equal(notYet.status, 404);
      assert.match(notYet.json.error_description, /has no output yet \(Waiting\)/);
      assert.equal((await get('/pilots/999999/logs', admin)).status, 404);
    });

    it('follows no symbolic link in the staging directory: a pilot output that is a link, or in a linked directory, is not there', async () => {
      const secret = join(svc.dataDir, 'not-for-pilots.txt');
      writeFileSync(secret, 'secret\n');
      const linked = await insertPilot(svc.ctx.db, { site: 'Batch', resource: '', reason: '', origin: 'factory', owner: 'pilot', batch_ref: '2001', state: 'Running' });
      mkdirSync(join(svc.dataDir, STAGING, String(linked)), { recursive: true });
      symlinkSync(secret, join(svc.dataDir, STAGING, String(linked), 'pilot.log'));
      const inDir = await insertPilot(svc.ctx.db, { site: 'Batch', resource: '', reason: '', origin: 'factory', owner: 'pilot', batch_ref: '2002', state: 'Running' });
      mkdirSync(join(svc.dataDir, 'elsewhere'));
      writeFileSync(join(svc.dataDir, 'elsewhere', 'pilot.log'), 'secret\n');
      symlinkSync(join(svc.dataDir, 'elsewhere'), join(svc.dataDir, STAGING, String(inDir)));
      for (const id of [linked, inDir]) {
        const res = await get(`/pilots/${id}/logs`, admin);
        assert.equal(res.status, 404, res.text);
        assert.match(res.json.error_description, /has no output yet \(Running\)/);
      }
      await svc.ctx.db.deleteFrom('pilots').where('pilot_id', 'in', [linked, inDir]).execute();
    });

    it('refuses commands to plain users (403) and to tokens limited by capability scopes; 400 naming the problem; 404 for unknown pilots and sites', async () => {
      const refused = await command(alice, { command: 'drain', pilots: [p.running] });
      assert.equal(refused.status, 403, refused.text);
      assert.match(refused.json.error_description, /JobAdministrator or SiteManager/);
      assert.equal((await command(carol, { command: 'revoke', site: 'Pool' })).status, 403);
      const tok = await svc.request(`/oauth2/token?grant_type=client_credentials&group=dirigo_sites&setup=${TEST_SETUP}&scope=compute.read`, { as: 'bob' });
      const limited = await command(tok.json.access_token, { command: 'drain', site: 'Pool' });
      assert.equal(limited.status, 403);
      assert.equal(limited.json.error, 'insufficient_scope');

      const both = await command(bob, { command: 'drain', pilots: [p.running], site: 'Pool' });
      assert.equal(both.status, 400);
      assert.match(both.json.error_description, /exactly one of the two/);
      assert.equal((await command(bob, { command: 'drain' })).status, 400);
      const verb = await command(bob, { command: 'pause', site: 'Pool' });
      assert.equal(verb.status, 400);
      assert.match(verb.json.error_description, /must be one of drain, stop, revoke/);
      for (const body of [{ command: 'drain', pilots: [] }, { command: 'drain', pilots: ['x'] }, { command: 'drain', pilots: [0] }, { command: 'drain', site: 'a b' }, { command: 'stop', site: 'Pool', reason: '' }]) {
        const res = await command(bob, body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      }
      const unknown = await command(bob, { command: 'stop', pilots: [p.running, 999998, 999999] });
      assert.equal(unknown.status, 404);
      assert.match(unknown.json.error_description, /no pilot 999998, 999999/);
      const site = await command(admin, { command: 'stop', site: 'Nowhere' });
      assert.equal(site.status, 404);
      assert.match(site.json.error_description, /no agents site named Nowhere \(agents sites: Pool, Batch\)/);
      assert.equal((await pilotById(svc.ctx.db, p.running))!.command, null, 'nothing applied');
    });

    it('drains and stops pilots that have not ended: by ids, by site', async () => {
      const drained = await command(bob, { command: 'drain', pilots: [p.running, p.done, p.waiting] });
      assert.equal(drained.status, 200, drained.text);
      assert.deepEqual(drained.json, { command: 'drain', pilots: [p.running, p.waiting] });
      assert.equal((await get(`/pilots/${p.running}`)).json.Command, 'drain');
      assert.equal((await get(`/pilots/${p.done}`)).json.Command, null);
      const stopped = await command(admin, { command: 'stop', site: 'Batch' });
      assert.equal(stopped.status, 200, stopped.text);
      assert.deepEqual(stopped.json, { command: 'stop', pilots: [p.waiting, p.live] });
      assert.deepEqual(
        (await get('/pilots?site=Batch')).json.pilots.map((x: { PilotID: number; Command: string | null; State: string }) => [x.PilotID, x.Command, x.State]),
        [
          [p.live, 'stop', 'Running'],
          [p.done, null, 'Done'],
          [p.waiting, 'stop', 'Waiting'],
        ],
      );
    });

    it('revokes a pilot: Aborted with the reason and who, its command cleared, the job it held rescheduled; a second revoke applies to none', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Pool'] });
      // The drain of the test before is lifted: a pilot with a command pending is given no job.
      await svc.ctx.db.updateTable('pilots').set({ command: null }).where('pilot_id', '=', p.running).execute();
      // The pilot's agent takes the job as pilot-<PilotID>, with its pilot token (that agent id is reserved for it).
      const { token: pilotToken } = await issuePilotToken(svc.ctx.db, p.running, 900000);
      const matched = await svc.request('/agents/match', { method: 'POST', token: pilotToken, json: { agentId: pilotAgentId(p.running), site: 'Pool', slots: 1 } });
      assert.equal(matched.status, 200, matched.text);
      assert.deepEqual(matched.json.jobs.map((j: { JobID: number }) => j.JobID), [jid]);
      await recordPilotJobs(svc.ctx.db, p.running, [jid]);
      assert.equal((await get(`/jobs/${jid}`)).json.Status, 'Matched');

      const revoked = await command(bob, { command: 'revoke', pilots: [p.running], reason: 'node compromised' });
      assert.equal(revoked.status, 200, revoked.text);
      assert.deepEqual(revoked.json, { command: 'revoke', pilots: [p.running] });
      const shown = (await get(`/pilots/${p.running}`)).json;
      assert.deepEqual([shown.State, shown.Reason, shown.RevokedBy, shown.Command], ['Aborted', 'node compromised', 'bob', null]);
      assert.match(shown.EndedAt, /Z$/);
      const job = await waitForStatus(svc, alice, jid, ['Waiting']);
      assert.equal(job.RescheduleCounter, 1);
      assert.deepEqual(shown.Jobs.map((j: { JobID: number }) => j.JobID), [jid]);

      const again = await command(admin, { command: 'revoke', pilots: [p.running] });
      assert.deepEqual(again.json, { command: 'revoke', pilots: [] });
      const bySite = await command(admin, { command: 'revoke', site: 'Pool' });
      assert.deepEqual(bySite.json, { command: 'revoke', pilots: [p.carols] });
      const carols = await pilotById(svc.ctx.db, p.carols);
      assert.deepEqual([carols!.state, carols!.revoked_by, carols!.reason], ['Aborted', 'admin', 'revoked by admin']);
    });
  });
}
