/**
 * Issue 36: `dirigo workflow` and the hold commands of `dirigo jobs`, the real CLI process against a real
 * service over TLS, on each dialect: a three-stage JSON workflow with an input file run in order and
 * watched to its end; JDL nodes that name each other, submitted held and released; a job's retries; hold
 * and release of single jobs; a workflow killed; usage errors (exit 2) before anything is sent.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import { TEST_SETUP, type TestService } from '../helpers/service.ts';
import { startJobsService } from '../jobs/helpers.ts';

const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd, env: { PATH: process.env.PATH ?? '', HOME: cwd, NO_COLOR: '1' } }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('dirigo workflow usage', () => {
  it('answers usage errors with exit 2 before anything is sent', async () => {
    const work = mkdtempSync(join(tmpdir(), 'dirigo-workflow-usage-'));
    writeFileSync(join(work, 'not-a-workflow.json'), JSON.stringify({ Executable: '/bin/true' }));
    writeFileSync(join(work, 'broken.jdl'), '[ Executable = ; ]');
    // Nothing listens there: an exit other than 2 would be the CLI trying to send.
    const nowhere = ['--url', 'https://127.0.0.1:9', '--token', 'not-used'];
    for (const args of [
      [],
      ['frobnicate'],
      ['submit'],
      ['submit', 'not-a-workflow.json'],
      ['submit', 'missing.json'],
      ['submit', 'broken.jdl'],
      ['submit', 'not-a-workflow.json', '--max-running', '0'],
      ['status'],
      ['status', 'x'],
      ['status', '1', '2'],
      ['status', '1', '--timeout', '5'],
      ['list', '--watch'],
      ['kill', '1', '--name', 'n'],
    ]) {
      const r = await run(['workflow', ...args, ...nowhere], work);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    }
    const help = await run(['workflow', '--help'], work);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^usage: dirigo workflow submit /);
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`dirigo workflow (${dialect})`, { skip }, () => {
    let svc: TestService;
    let work: string;
    before(async () => {
      svc = await startJobsService(dialect);
      work = mkdtempSync(join(tmpdir(), 'dirigo-workflow-cli-'));
      writeFileSync(join(work, 'sleep.json'), JSON.stringify({ Executable: '/bin/sleep', Arguments: '60' }));
      writeFileSync(join(work, 'true.json'), JSON.stringify({ Executable: '/bin/true' }));
    });
    after(() => svc?.close());

    function dirigo(args: string[], user = 'alice'): Promise<Run> {
      const u = svc.pki.users[user]!;
      const group = user === 'alice' ? ['--group', 'dirigo_user'] : [];
      const conn = ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', u.certFile, '--key', u.keyFile, ...group, '--setup', TEST_SETUP];
      return run([...args, ...conn], work);
    }
    const ok = (r: Run) => assert.equal(r.code, 0, `exit ${r.code}\n${r.stdout}${r.stderr}`);
    const json = async (args: string[]) => {
      const r = await dirigo([...args, '--json']);
      ok(r);
      return JSON.parse(r.stdout);
    };
    /** Reads the job until `pass` holds (the gatekeeper and the scheduler move jobs on their own). */
    const until = async (jid: number, pass: (job: Record<string, unknown>) => boolean) => {
      for (let i = 0; i < 300; i++) {
        const job = await json(['jobs', 'show', String(jid)]);
        if (pass(job)) return job;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.fail(`job ${jid} never got there`);
    };

    it('submits a three-stage JSON workflow with an input file, runs it in order and watches it to its end', async () => {
      writeFileSync(join(work, 'stage.sh'), '#!/bin/sh\necho "stage $1"\n');
      writeFileSync(
        join(work, 'mc.json'),
        JSON.stringify({
          Name: 'from-the-file',
          Jobs: [
            { NodeName: 'simulate', Executable: 'stage.sh', Arguments: 'sim' },
            { NodeName: 'reconstruct', Executable: 'stage.sh', Arguments: '%n', Parameters: 3, DependsOn: ['simulate'] },
            { NodeName: 'merge', Executable: 'stage.sh', Arguments: 'merge', DependsOn: 'reconstruct', DependencyType: 'afterok' },
          ],
        }),
      );
      const sub = await dirigo(['workflow', 'submit', 'mc.json', 'stage.sh', '--name', 'mc-2026', '--max-running', '2']);
      ok(sub);
      const wid = Number(/^WorkflowID (\d+)\n/.exec(sub.stdout)?.[1]);
      assert.ok(wid > 0, sub.stdout);
      assert.match(sub.stdout, /\nNODE\s+JOBS\s+JOB IDS\n/);
      assert.match(sub.stdout, /\nsimulate\s+1\s+\d+\n/);
      assert.match(sub.stdout, /\nreconstruct\s+3\s+\d+-\d+\n/);
      assert.match(sub.stdout, /\n5 job\(s\)\n$/);

      const watch = await dirigo(['workflow', 'status', String(wid), '--watch', '--timeout', '120']);
      ok(watch);
      assert.match(watch.stdout, new RegExp(`Z  workflow ${wid}  Done: 5 job\\(s\\); Done 5\\n`));
      assert.match(watch.stdout, new RegExp(`\\nWorkflowID  ${wid}  mc-2026 \\(\\w+\\)\\n`));
      assert.match(watch.stdout, /, MaxRunning 2\n/);
      assert.match(watch.stdout, /\nNODE\s+DEPENDS ON\s+JOBS\s+Done\nsimulate\s+-\s+1\s+1\nreconstruct\s+simulate \(afterok\)\s+3\s+3\nmerge\s+reconstruct \(afterok\)\s+1\s+1\n/);

      const w = await json(['workflow', 'status', String(wid)]);
      assert.deepEqual([w.Name, w.MaxRunning, w.Status, w.Jobs.length, w.Counts], ['mc-2026', 2, 'Done', 5, { Done: 5 }]);
      const [sim, reco, merge] = ['simulate', 'reconstruct', 'merge'].map((n) => w.Nodes.find((x: { Name: string }) => x.Name === n).JobIDs as number[]);
      // In order: every job after its parents ended.
      const shown = await json(['jobs', 'show', String(merge![0])]);
      assert.deepEqual(shown.Parents, reco!.map((JobID) => ({ JobID, Status: 'Done' })));
      const listed = (await json(['jobs', 'list', '--attr', `WorkflowID=${wid}`])).jobs as { JobID: number; StartExecTime: string; EndExecTime: string }[];
      const times = new Map(listed.map((j) => [j.JobID, { start: Date.parse(j.StartExecTime), end: Date.parse(j.EndExecTime) }]));
      for (const r of reco!) assert.ok(times.get(r)!.start >= times.get(sim![0]!)!.end, `job ${r} started before simulate ended`);
      for (const r of reco!) assert.ok(times.get(merge![0]!)!.start >= times.get(r)!.end, `merge started before job ${r} ended`);

      const text = await dirigo(['jobs', 'show', String(reco![0])]);
      ok(text);
      assert.match(text.stdout, new RegExp(`\\nWorkflowID\\s+${wid} \\(node reconstruct\\)\\n`));
      assert.match(text.stdout, new RegExp(`\\nParents\\s+${sim![0]} \\(Done\\); afterok\\n`));
      assert.match(text.stdout, new RegExp(`\\nChildren\\s+${merge![0]}\\n`));
      assert.match(text.stdout, /\nRetryCounter\s+0 of 0 \(MaxRetries\)\n/);
      assert.match(text.stdout, /\nHoldReason\n/);
      const out = await dirigo(['jobs', 'sandbox', String(reco![1]), 'output', '-o', 'reco-out']);
      ok(out);

      const jobs = await dirigo(['workflow', 'status', String(wid), '--jobs']);
      ok(jobs);
      assert.match(jobs.stdout, new RegExp(`\\nJOB\\s+NODE\\s+STATUS\\s+HOLD\\s+RETRIES\\s+PARENTS\\s+MINOR STATUS\\n${sim![0]}\\s+simulate\\s+Done\\s+0\\s+`));

      const list = await dirigo(['workflow', 'list']);
      ok(list);
      assert.match(list.stdout, /^ID\s+NAME\s+KIND\s+OWNER\s+JOBS\s+STATUS\s+SUBMITTED\s+COUNTS\n/);
      assert.match(list.stdout, new RegExp(`\\n${wid}\\s+mc-2026\\s+\\w+\\s+alice\\s+5\\s+Done\\s+\\S+ \\S+\\s+Done 5\\n`));
      assert.ok((await json(['workflow', 'list'])).Workflows.some((x: { WorkflowID: number }) => x.WorkflowID === wid));
      // Another user's workflow is not found (exit 4), as another user's job is.
      assert.equal((await dirigo(['workflow', 'status', String(wid)], 'bob')).code, 4);
    });

    it('submits JDL nodes that name each other, held; releases them; the JSON answer names every job', async () => {
      writeFileSync(join(work, 'first.jdl'), '[ NodeName = "first"; Executable = "/bin/echo"; Arguments = "one"; ]\n');
      writeFileSync(join(work, 'second.jdl'), '[ JobName = "second"; Executable = "/bin/echo"; Arguments = "two"; DependsOn = {"first"}; ]\n');
      const sub = await dirigo(['workflow', 'submit', 'first.jdl', 'second.jdl', '--name', 'jdl-set', '--hold', '--json']);
      ok(sub);
      const answer = JSON.parse(sub.stdout) as { WorkflowID: number; JobIDs: number[]; Nodes: Record<string, number[]> };
      assert.deepEqual(Object.keys(answer.Nodes).sort(), ['first', 'second']);
      assert.deepEqual([...answer.Nodes.first!, ...answer.Nodes.second!].sort(), [...answer.JobIDs].sort());
      const wid = String(answer.WorkflowID);
      const [first, second] = [answer.Nodes.first![0]!, answer.Nodes.second![0]!];

      const held = await dirigo(['workflow', 'status', wid]);
      ok(held);
      assert.match(held.stdout, /\nStatus\s+Active: 2 job\(s\); Received 2\n/);
      assert.match(held.stdout, /\nfirst\s+-\s+1\s+1\s+Held 1\nsecond\s+first \(afterok\)\s+1\s+1\s+Held 1\n/);
      assert.equal((await json(['jobs', 'show', String(first)])).HoldReason, 'Held');

      const release = await dirigo(['workflow', 'release', wid]);
      ok(release);
      assert.match(release.stdout, new RegExp(`^workflow ${wid}: released 1 job\\(s\\), now Waiting: ${first}\\nworkflow ${wid}: released 1 job\\(s\\), now Received: ${second}\\n$`));
      await until(second, (j) => j.Status === 'Done');
      const watch = await dirigo(['workflow', 'status', wid, '--watch']);
      ok(watch);
      assert.match(watch.stdout, /Done: 2 job\(s\); Done 2\n/);
    });

    it('shows a job\'s retries', async () => {
      writeFileSync(join(work, 'false.json'), JSON.stringify({ Executable: '/bin/false', MaxRetries: 1, RetryDelay: 0 }));
      const jid = (await dirigo(['jobs', 'submit', 'false.json'])).stdout.trim();
      assert.equal((await dirigo(['jobs', 'wait', jid, '--timeout', '120'])).code, 1);
      const shown = await dirigo(['jobs', 'show', jid]);
      ok(shown);
      assert.match(shown.stdout, /\nStatus\s+Failed\n/);
      assert.match(shown.stdout, /\nRetryCounter\s+1 of 1 \(MaxRetries\)\n/);
      assert.match(shown.stdout, /\nWorkflowID\n/);
    });

    it('holds and releases jobs, submits held, and kills a workflow with a held job in it', async () => {
      // submit --hold: the job waits for 'release', then runs.
      const jid = (await dirigo(['jobs', 'submit', 'true.json', '--hold'])).stdout.trim();
      assert.match(jid, /^\d+$/);
      const shown = await dirigo(['jobs', 'show', jid]);
      assert.match(shown.stdout, /\nStatus\s+Received\n/);
      assert.match(shown.stdout, /\nHoldReason\s+Held\n/);
      const released = await dirigo(['jobs', 'release', jid]);
      ok(released);
      assert.match(released.stdout, new RegExp(`^job ${jid}: \\w+\\n$`));
      ok(await dirigo(['jobs', 'wait', jid, '--timeout', '60']));

      // A running parent and a child waiting for it: the child is held and released, the parent refused.
      writeFileSync(join(work, 'pair.json'), JSON.stringify({ Jobs: [{ NodeName: 'parent', Executable: '/bin/sleep', Arguments: '60' }, { NodeName: 'child', Executable: '/bin/true', DependsOn: 'parent' }] }));
      const pair = await json(['workflow', 'submit', 'pair.json']);
      const [parent, child] = [pair.Nodes.parent[0] as number, pair.Nodes.child[0] as number];
      await until(parent, (j) => j.Status === 'Running');
      assert.equal((await until(child, (j) => j.HoldReason === 'Dependency')).Status, 'Received');
      const hold = await dirigo(['jobs', 'hold', String(child), String(parent)]);
      assert.equal(hold.code, 1, hold.stderr);
      assert.match(hold.stdout, new RegExp(`^job ${child}: Received\\n$`));
      assert.match(hold.stderr, new RegExp(`^dirigo jobs: job ${parent} .*Running`, 'm'));
      assert.equal((await json(['jobs', 'show', String(child)])).HoldReason, 'Held');
      const status = await dirigo(['workflow', 'status', String(pair.WorkflowID)]);
      assert.match(status.stdout, /\nchild\s+parent \(afterok\)\s+1\s+1\s+0\s+Held 1\n/);
      ok(await dirigo(['jobs', 'release', String(child)]));
      assert.equal((await json(['jobs', 'show', String(child)])).HoldReason, 'Dependency');
      assert.equal((await dirigo(['jobs', 'hold', '999999'])).code, 4);
      // The workflow's hold and release take the jobs that can be held or released (the child only).
      const wid = String(pair.WorkflowID);
      const wfHeld = await dirigo(['workflow', 'hold', wid]);
      ok(wfHeld);
      assert.equal(wfHeld.stdout, `workflow ${wid}: held 1 job(s): ${child}\n`);
      const wfReleased = await dirigo(['workflow', 'release', wid]);
      ok(wfReleased);
      assert.equal(wfReleased.stdout, `workflow ${wid}: released 1 job(s), now Received: ${child}\n`);

      const kill = await dirigo(['workflow', 'kill', String(pair.WorkflowID)]);
      ok(kill);
      assert.equal(kill.stdout, `workflow ${pair.WorkflowID}: killed 2 job(s): ${parent}-${child}\n`);
      const watch = await dirigo(['workflow', 'status', String(pair.WorkflowID), '--watch']);
      assert.equal(watch.code, 1, watch.stderr);
      assert.match(watch.stdout, /Killed: 2 job\(s\); Killed 2\n/);
      assert.equal((await dirigo(['workflow', 'kill', '999999'])).code, 4);
    });
  });
}
