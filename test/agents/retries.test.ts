/**
 * What a run's end makes of its job on an agents site (docs/workflows.md "When a run ends"), with a real
 * `dirigo agent` process: retries through the gatekeeper's back-off, a success code, OnExitHold; the same
 * rules as on local sites (lifecycle/run-end.ts).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from '../jobs/helpers.ts';
import { startAgent, type AgentProcess } from './agent-process.ts';

interface HistoryRow {
  Status: string;
  MinorStatus: string;
  Source: string;
}

const sh = (script: string) => ({ Executable: '/bin/sh', Arguments: `-c '${script}'`, Sites: ['Pool'] });

for (const { dialect, skip } of await dialects()) {
  describe(`retries on an agents site (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    const agents: AgentProcess[] = [];

    before(async () => {
      svc = await startJobsService(dialect, { sites: [{ name: 'Local', type: 'local', slots: 1 }, { name: 'Pool', type: 'agents', heartbeatIntervalMs: 200 }] });
      alice = await svc.token('alice');
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool' }));
    });
    afterEach(() => {
      for (const a of agents) if (a.child.exitCode !== null) assert.fail(`the agent exited: ${a.log()}`);
    });
    after(async () => {
      await Promise.all(agents.splice(0).map((a) => a.stop('SIGKILL')));
      await svc?.close();
    });

    test('an agent reports a retryable exit code: retried after its back-off, run again by the agent, then Failed', async () => {
      const jid = await submit(svc, alice, { ...sh('exit 3'), MaxRetries: 2, RetryExitCodes: [3], RetryDelay: 1 });
      const failed = await waitForStatus(svc, alice, jid, ['Failed'], 60000);
      assert.equal(failed.MinorStatus, 'Failed after 2 retries: exit code 3', agents[0]!.log());
      assert.equal(failed.RetryCounter, 2);
      assert.equal(failed.RescheduleCounter, 0);
      const history = failed.StatusHistory as HistoryRow[];
      const retries = history.filter((h) => h.Status === 'Rescheduled');
      assert.deepEqual(retries.map((h) => [h.MinorStatus, h.Source]), [
        ['Retry 1 of 2: exit code 3 at site Pool', 'Agent@Pool'],
        ['Retry 2 of 2: exit code 3 at site Pool', 'Agent@Pool'],
      ]);
      assert.deepEqual(history.filter((h) => h.Status === 'Received' && h.MinorStatus.startsWith('Retrying')).map((h) => h.MinorStatus), ['Retrying in 1 s', 'Retrying in 2 s']);
      assert.equal(history.filter((h) => h.Status === 'Running').length, 3);
    });

    test('an agent reports a code of SuccessExitCodes: Done', async () => {
      const jid = await submit(svc, alice, { ...sh('exit 7'), SuccessExitCodes: [7] });
      const done = await waitForStatus(svc, alice, jid, ['Done', 'Failed'], 30000);
      assert.equal(done.Status, 'Done', String(done.MinorStatus));
      assert.equal(done.MinorStatus, 'Execution Complete (exit code 7 is in SuccessExitCodes)');
      assert.equal(done.ExitCode, 7);
    });

    test('an agent reports a code of OnExitHold (its payload killed by SIGKILL): held, not matched again', async () => {
      const jid = await submit(svc, alice, { ...sh('kill -9 $$'), OnExitHold: [137], MaxRetries: 3 });
      const held = await waitForStatus(svc, alice, jid, ['Received', 'Failed'], 30000);
      assert.deepEqual([held.Status, held.HoldReason, held.MinorStatus, held.ExitCode], ['Received', 'ExitCode', 'Held: exit code 137 (OnExitHold)', 137]);
      await new Promise((r) => setTimeout(r, 1000));
      const later = (await svc.request(`/jobs/${jid}`, { token: alice })).json;
      assert.equal(later.Status, 'Received');
      assert.equal((later.StatusHistory as HistoryRow[]).filter((h) => h.Status === 'Matched').length, 1);
    });
  });
}
