/**
 * What a run's end makes of its job on local sites (docs/workflows.md "When a run ends"): retries up to
 * MaxRetries with RetryExitCodes, RetryDelay's back-off (Received, BackOff), SuccessExitCodes, OnExitHold,
 * BanFailedSites across two sites, reschedules by hand counted apart; the keys' checks at submission (JSON
 * and JDL); RetryCounter and HoldReason in search, summary and events.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { curlStream } from '../helpers/sse.ts';
import { startJobsService, submit, untar, waitForStatus } from './helpers.ts';
import { parseJdl, renderJdl } from '../../src/protocol/jdl.ts';

interface HistoryRow {
  Status: string;
  MinorStatus: string;
  Source: string;
}

const sh = (script: string) => ({ Executable: '/bin/sh', Arguments: `-c '${script}'` });

it('reads the retry keys from JDL as a manifest has them, and writes them back', () => {
  const manifest = { Executable: 'run.sh', MaxRetries: 3, RetryExitCodes: [3, 4], SuccessExitCodes: [2], OnExitHold: [137], RetryDelay: 0, BanFailedSites: false };
  assert.deepEqual(parseJdl(renderJdl(manifest)), manifest);
  assert.deepEqual(parseJdl('[ Executable = "x"; onexithold = 137; RETRYEXITCODES = "3"; banfailedsites = "FALSE"; maxretries = "1" ]'), {
    Executable: 'x',
    OnExitHold: [137],
    RetryExitCodes: [3],
    BanFailedSites: false,
    MaxRetries: 1,
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`retries when a run ends (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      svc = await startJobsService(dialect, {
        scheduler: { maxReschedules: 3 },
        sites: [
          { name: 'Local', type: 'local', slots: 4 },
          { name: 'Other', type: 'local', slots: 4 },
        ],
      });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    const job = async (jid: number) => (await svc.request(`/jobs/${jid}`, { token: alice })).json as Record<string, unknown> & { StatusHistory: HistoryRow[] };

    it('refuses bad retry keys with a 400 naming the key, in JSON and in JDL', async () => {
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ MaxRetries: 11 }, /MaxRetries must be an integer from 0 to 10 \(jobs\.workflows\.maxRetries\)/],
        [{ MaxRetries: -1 }, /MaxRetries/],
        [{ MaxRetries: 1.5 }, /MaxRetries/],
        [{ RetryExitCodes: 3 }, /RetryExitCodes must be a list of exit codes/],
        [{ SuccessExitCodes: [2, 256] }, /SuccessExitCodes holds 256; exit codes are integers from 1 to 255/],
        [{ OnExitHold: ['137'] }, /OnExitHold holds "137"/],
        [{ OnExitHold: Array.from({ length: 256 }, (_, i) => (i % 255) + 1) }, /OnExitHold has 256 entries; at most 255/],
        [{ RetryExitCodes: [0, 3] }, /RetryExitCodes holds 0; exit codes are integers from 1 to 255 \(0 is success already\)/],
        [{ SuccessExitCodes: [0] }, /SuccessExitCodes holds 0/],
        [{ RetryDelay: 3601 }, /RetryDelay must be an integer from 0 to 3600/],
        [{ BanFailedSites: 'yes' }, /BanFailedSites must be true or false/],
      ];
      for (const [keys, message] of cases) {
        const res = await svc.request('/jobs', { method: 'POST', token: alice, json: { Executable: '/bin/true', ...keys } });
        assert.equal(res.status, 400, JSON.stringify(keys));
        assert.match(res.json.error_description, message);
      }
      // JDL: one code is a list of one, quoted numbers and booleans are read as DIRAC users write them.
      const jdl = '[ Executable = "/bin/true"; Site = "Local"; maxretries = "2"; OnExitHold = 137; RetryExitCodes = {"3", 4}; SuccessExitCodes = {}; RetryDelay = 5; BanFailedSites = "true"; ]';
      const res = await svc.request('/jobs', { method: 'POST', token: alice, body: jdl, headers: { 'content-type': 'text/x-jdl' } });
      assert.equal(res.status, 201, res.text);
      const manifest = await svc.request(`/jobs/${res.json.jids[0]}/manifest`, { token: alice, headers: { accept: 'application/json' } });
      assert.equal(manifest.status, 200, manifest.text);
      const m = manifest.json;
      assert.deepEqual([m.MaxRetries, m.OnExitHold, m.RetryExitCodes, m.SuccessExitCodes, m.RetryDelay, m.BanFailedSites], [2, [137], [3, 4], [], 5, true]);
      const bad = await svc.request('/jobs', { method: 'POST', token: alice, body: '[ Executable = "/bin/true"; OnExitHold = {137, "x"}; ]', headers: { 'content-type': 'text/x-jdl' } });
      assert.equal(bad.status, 400);
      assert.match(bad.json.error_description, /OnExitHold holds "x"/);
    });

    it('retries a retryable exit code up to MaxRetries, then fails saying so; each retry is in the history', async () => {
      const jid = await submit(svc, alice, { ...sh('echo run; exit 3'), MaxRetries: 2, RetryExitCodes: [3], RetryDelay: 0, OutputSandbox: ['*.txt'] });
      const failed = await waitForStatus(svc, alice, jid, ['Failed'], 30000);
      assert.equal(failed.MinorStatus, 'Failed after 2 retries: exit code 3');
      assert.equal(failed.RetryCounter, 2);
      assert.equal(failed.RescheduleCounter, 0, 'retries are not reschedules');
      assert.equal(failed.ExitCode, 3);
      assert.equal(failed.HoldReason, '');
      const history = (failed.StatusHistory as HistoryRow[]).map((h) => `${h.Status}: ${h.MinorStatus}`);
      assert.equal(history.filter((h) => h.startsWith('Running:')).length, 3, 'three runs');
      const retries = history.filter((h) => h.startsWith('Rescheduled:'));
      assert.equal(retries.length, 2);
      assert.match(retries[0]!, /^Rescheduled: Retry 1 of 2: exit code 3 at site (Local|Other)$/);
      assert.match(retries[1]!, /^Rescheduled: Retry 2 of 2: exit code 3 at site (Local|Other)$/);
      assert.equal(history.filter((h) => h === 'Waiting: Retrying now; waiting for a free slot').length, 2);
      // The last run's output is kept, as for any Failed job.
      const out = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
      assert.equal(out.status, 200);
      assert.equal((await untar(out.body)).get('std.out')?.toString(), 'run\n');
    });

    it('backs off RetryDelay, doubled each time, through the gatekeeper: three runs, then Failed', async () => {
      const jid = await submit(svc, alice, { ...sh('exit 3'), MaxRetries: 2, RetryExitCodes: [3], RetryDelay: 1 });
      const failed = await waitForStatus(svc, alice, jid, ['Failed'], 60000);
      assert.equal(failed.MinorStatus, 'Failed after 2 retries: exit code 3');
      assert.deepEqual([failed.RetryCounter, failed.HoldReason], [2, '']);
      const history = (failed.StatusHistory as HistoryRow[]).map((h) => `${h.Status}: ${h.MinorStatus}`);
      const retries = history.filter((h) => /^(Rescheduled|Received): (Retry|Retrying)/.test(h));
      assert.equal(retries.length, 4, history.join('\n'));
      assert.match(retries[0]!, /^Rescheduled: Retry 1 of 2: exit code 3 at site (Local|Other)$/);
      assert.equal(retries[1], 'Received: Retrying in 1 s');
      assert.match(retries[2]!, /^Rescheduled: Retry 2 of 2: exit code 3 at site (Local|Other)$/);
      assert.equal(retries[3], 'Received: Retrying in 2 s', 'the delay doubles');
      assert.equal(history.filter((h) => h.startsWith('Running:')).length, 3);
      // Each back-off ended by the gatekeeper, to Waiting, before the next run.
      assert.equal((failed.StatusHistory as HistoryRow[]).filter((h) => h.Status === 'Waiting').length, 3);
    });

    it('waits out RetryDelay as Received (BackOff), the previous run forgotten; found by HoldReason and RetryCounter in search, summary and events', async () => {
      const events = curlStream(`${svc.url}/jobs/events?HoldReason=BackOff`, svc.pki.caFile, { authorization: `Bearer ${alice}` });
      try {
        await events.waitFor((e) => e.event === 'ready');
        const jid = await submit(svc, alice, { ...sh('exit 4'), MaxRetries: 3, RetryDelay: 3600, JobGroup: 'backoff' });
        const held = await waitForStatus(svc, alice, jid, ['Received'], 30000);
        assert.equal(held.HoldReason, 'BackOff');
        assert.equal(held.MinorStatus, 'Retrying in 3600 s');
        assert.equal(held.RetryCounter, 1);
        assert.deepEqual([held.ExitCode, held.StartExecTime, held.EndExecTime], [null, null, null], "the previous run's exit code and times go");
        const stored = await svc.ctx.db.selectFrom('jobs').select(['output_sandbox', 'not_before']).where('job_id', '=', jid).executeTakeFirstOrThrow();
        assert.equal(stored.output_sandbox, null, 'and its output');
        assert.ok(stored.not_before !== null && Date.parse(stored.not_before) > Date.now() + 3000_000, 'not before the delay is over');
        const rescheduled = (held.StatusHistory as HistoryRow[]).find((h) => h.Status === 'Rescheduled');
        assert.match(rescheduled!.MinorStatus, /^Retry 1 of 3: exit code 4 at site (Local|Other)$/);
        const seen = await events.waitFor((e) => e.event === 'status' && JSON.parse(e.data).JobID === jid && JSON.parse(e.data).Status === 'Received');
        assert.equal(JSON.parse(seen.data).MinorStatus, 'Retrying in 3600 s');
        const search = await svc.request('/jobs/search', {
          method: 'POST',
          token: alice,
          json: { parameters: ['JobID', 'HoldReason', 'RetryCounter'], search: [{ parameter: 'RetryCounter', operator: 'ge', value: 1 }, { parameter: 'HoldReason', operator: 'eq', value: 'BackOff' }] },
        });
        assert.equal(search.status, 200, search.text);
        assert.deepEqual(search.json.jobs, [{ JobID: jid, HoldReason: 'BackOff', RetryCounter: 1 }]);
        const summary = await svc.request('/jobs/summary?groupBy=Status&groupBy=HoldReason&JobGroup=backoff', { token: alice });
        assert.equal(summary.status, 200, summary.text);
        assert.deepEqual(summary.json.summary, [{ Status: 'Received', HoldReason: 'BackOff', count: 1 }]);
        const listed = await svc.request(`/jobs?RetryCounter=1&HoldReason=BackOff`, { token: alice });
        assert.equal(listed.status, 200, listed.text);
        assert.deepEqual(listed.json.jobs.map((r: { JobID: number }) => r.JobID), [jid]);
        // Never matched while it waits out its delay.
        await new Promise((r) => setTimeout(r, 1000));
        assert.equal((await job(jid)).Status, 'Received');
        assert.equal(events.events.filter((e) => e.event === 'status').every((e) => JSON.parse(e.data).JobID === jid), true, 'only jobs whose HoldReason is BackOff');
      } finally {
        events.close();
      }
    });

    it('fails at once on an exit code that RetryExitCodes does not list', async () => {
      const jid = await submit(svc, alice, { ...sh('exit 2'), MaxRetries: 2, RetryExitCodes: [3], RetryDelay: 0 });
      const failed = await waitForStatus(svc, alice, jid, ['Failed'], 30000);
      assert.equal(failed.MinorStatus, 'Not retried: exit code 2 is not in RetryExitCodes');
      assert.equal(failed.RetryCounter, 0);
      assert.equal((failed.StatusHistory as HistoryRow[]).filter((h) => h.Status === 'Running').length, 1);
      // Without MaxRetries the run's own words stay.
      const plain = await waitForStatus(svc, alice, await submit(svc, alice, sh('exit 2')), ['Failed'], 30000);
      assert.equal(plain.MinorStatus, 'Application exited with code 2');
    });

    it('counts an exit code of SuccessExitCodes as success: Done, with its output sandbox', async () => {
      const jid = await submit(svc, alice, { ...sh('echo fine > result.txt; exit 2'), SuccessExitCodes: [2], MaxRetries: 1, OutputSandbox: ['result.txt'] });
      const done = await waitForStatus(svc, alice, jid, ['Done', 'Failed'], 30000);
      assert.equal(done.Status, 'Done', String(done.MinorStatus));
      assert.equal(done.MinorStatus, 'Execution Complete (exit code 2 is in SuccessExitCodes)');
      assert.equal(done.ExitCode, 2);
      assert.equal(done.RetryCounter, 0);
      assert.deepEqual((done.StatusHistory as HistoryRow[]).map((h) => h.Status).slice(-3), ['Running', 'Completing', 'Done']);
      const out = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
      assert.equal(out.status, 200);
      assert.equal((await untar(out.body)).get('result.txt')?.toString(), 'fine\n');
    });

    it('holds a job whose run ends with a code of OnExitHold (a SIGKILL is 137): Received, ExitCode, never matched', async () => {
      const jid = await submit(svc, alice, { ...sh('echo before; kill -9 $$'), OnExitHold: [137], MaxRetries: 2, OutputSandbox: ['*.txt'] });
      const held = await waitForStatus(svc, alice, jid, ['Received', 'Failed'], 30000);
      assert.equal(held.Status, 'Received', String(held.MinorStatus));
      assert.equal(held.HoldReason, 'ExitCode');
      assert.equal(held.MinorStatus, 'Held: exit code 137 (OnExitHold)');
      assert.equal(held.ExitCode, 137, 'kept for a look');
      assert.equal(held.RetryCounter, 0, 'not a retry');
      const out = await svc.request(`/jobs/${jid}/outputsandbox`, { token: alice });
      assert.equal(out.status, 200, 'its output is kept for a look');
      assert.equal((await untar(out.body)).get('std.out')?.toString(), 'before\n');
      await new Promise((r) => setTimeout(r, 1500));
      const later = await job(jid);
      assert.equal(later.Status, 'Received');
      assert.equal(later.StatusHistory.filter((h) => h.Status === 'Matched').length, 1, 'never matched again');
      // Released, it runs again (and is held again by the same code).
      const released = await svc.request('/jobs/release', { method: 'POST', token: alice, json: { jids: [jid] } });
      assert.deepEqual(released.json.results, [{ jid, Status: 'Waiting' }]);
      for (const deadline = Date.now() + 30000; ; await new Promise((r) => setTimeout(r, 100))) {
        const again = await job(jid);
        if (again.StatusHistory.filter((h) => h.Status === 'Received' && h.MinorStatus === 'Held: exit code 137 (OnExitHold)').length === 2) {
          assert.deepEqual([again.Status, again.HoldReason, again.RetryCounter], ['Received', 'ExitCode', 0]);
          break;
        }
        assert.ok(Date.now() < deadline, `released job ${jid} did not run again: ${again.Status} ${again.MinorStatus}`);
      }
    });

    it('fails a run stopped for exceeding CPUTime at once, whatever SuccessExitCodes, OnExitHold and MaxRetries say', async () => {
      const codes = Array.from({ length: 255 }, (_, i) => i + 1);
      const jid = await submit(svc, alice, { ...sh('while :; do :; done'), CPUTime: 1, SuccessExitCodes: codes, MaxRetries: 2, RetryDelay: 0 });
      const ended = await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Received'], 60000);
      assert.equal(ended.Status, 'Failed', String(ended.MinorStatus));
      assert.match(String(ended.MinorStatus), /^CPU time limit exceeded/);
      assert.equal(ended.RetryCounter, 0, 'not retried');
      const held = await submit(svc, alice, { ...sh('while :; do :; done'), CPUTime: 1, OnExitHold: [137, 143], MaxRetries: 1 });
      assert.equal((await waitForStatus(svc, alice, held, ['Done', 'Failed', 'Received'], 60000)).Status, 'Failed');
    });

    it('bans the site that failed (BanFailedSites) and retries at the other; never bans the last site', async () => {
      const jid = await submit(svc, alice, { ...sh('echo $DIRIGO_SITE; exit 5'), MaxRetries: 2, RetryDelay: 0, BanFailedSites: true });
      const failed = await waitForStatus(svc, alice, jid, ['Failed'], 30000);
      assert.equal(failed.MinorStatus, 'Failed after 2 retries: exit code 5');
      const retries = (failed.StatusHistory as HistoryRow[]).filter((h) => h.Status === 'Rescheduled').map((h) => h.MinorStatus);
      const first = /at site (\w+)/.exec(retries[0]!)![1]!;
      const other = first === 'Local' ? 'Other' : 'Local';
      assert.deepEqual(retries, [`Retry 1 of 2: exit code 5 at site ${first}; site ${first} banned`, `Retry 2 of 2: exit code 5 at site ${other}`], 'the second failure leaves one site: not banned');
      assert.equal(failed.Site, other);
      const manifest = await svc.request(`/jobs/${jid}/manifest`, { token: alice, headers: { accept: 'application/json' } });
      assert.deepEqual(manifest.json.BannedSites, [first]);
      const row = await svc.ctx.db.selectFrom('jobs').innerJoin('task_queues', 'task_queues.tq_id', 'jobs.tq_id').select('task_queues.banned_sites').where('jobs.job_id', '=', jid).executeTakeFirstOrThrow();
      assert.equal(row.banned_sites, `,${first},`, 'its task queue bans it');
    });

    it('counts a reschedule by hand in RescheduleCounter, apart from the retries', async () => {
      const jid = await submit(svc, alice, { ...sh('exit 3'), MaxRetries: 1, RetryDelay: 0 });
      const failed = await waitForStatus(svc, alice, jid, ['Failed'], 30000);
      assert.deepEqual([failed.RetryCounter, failed.RescheduleCounter], [1, 0]);
      const res = await svc.request('/jobs/reschedule', { method: 'POST', token: alice, json: { jids: [jid] } });
      assert.deepEqual(res.json.results, [{ jid, Status: 'Waiting' }]);
      const again = await waitForStatus(svc, alice, jid, ['Failed'], 30000);
      assert.deepEqual([again.RetryCounter, again.RescheduleCounter], [1, 1]);
      // MaxRetries bounds the automatic retries over the job's life: the retry is used up.
      assert.equal(again.MinorStatus, 'Failed after 1 retries: exit code 3');
      assert.equal((again.StatusHistory as HistoryRow[]).filter((h) => h.Status === 'Running').length, 3);
    });
  });
}
