import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { canTransition, changeStatus, TRANSITIONS } from '../../src/jobs/state-machine.ts';
import { JobEvents } from '../../src/jobs/lifecycle/job-events.ts';
import { MINOR_STATUS_WIDTH } from '../../src/protocol/job-status.ts';
import { splitArguments } from '../../src/jobs/arguments.ts';
import { JobStatus } from '../../src/jobs/model.ts';
import { clockTicks, parseStat, readStat } from '../../src/payload/process-stats.ts';
import { startJobsService, submit } from './helpers.ts';

describe('arguments: POSIX quoting without expansion', () => {
  const cases: [string, string[]][] = [
    ['', []],
    ['  a   b ', ['a', 'b']],
    [`'a b' "c d"`, ['a b', 'c d']],
    [`"say \\"hi\\"" 'it''s'`, ['say "hi"', 'its']],
    [`a\\ b c\\\\d`, ['a b', 'c\\d']],
    [`"$HOME" $PATH '*' ~ \`x\``, ['$HOME', '$PATH', '*', '~', '`x`']],
    [`"a\\b" "\\$x"`, ['a\\b', '$x']],
    [`''`, ['']],
    [`x"y"'z'`, ['xyz']],
  ];
  for (const [text, words] of cases) it(JSON.stringify(text), () => assert.deepEqual(splitArguments(text), words));
  for (const bad of [`'open`, `"open`, `trailing\\`]) it(`refuses ${JSON.stringify(bad)}`, () => assert.throws(() => splitArguments(bad)));
});

describe('CPU time from /proc/<pid>/stat', () => {
  it('parses a stat line whose command holds spaces and parentheses', () => {
    const hz = clockTicks();
    const line = `4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 ${3 * hz} ${hz} ${hz} 0 20 0 1 0 987654 1000 100`;
    // utime 3 s + cutime 1 s in user mode, stime 1 s in kernel mode.
    assert.deepEqual(parseStat(line), { pid: 4242, pgrp: 4242, cpuSeconds: 5, userSeconds: 4, systemSeconds: 1, startTime: 987654 });
  });
  it('reads this process', async () => {
    const st = await readStat(process.pid);
    assert.equal(st?.pid, process.pid);
    assert.ok((st?.cpuSeconds ?? -1) >= 0);
  });
});

describe('the transition table', () => {
  it('is DIRAC’s: final states only go to Rescheduled or Deleted, Deleted nowhere', () => {
    assert.deepEqual(TRANSITIONS.Deleted, []);
    for (const s of ['Done', 'Failed', 'Killed']) assert.deepEqual([...TRANSITIONS[s as JobStatus]].sort(), ['Deleted', 'Rescheduled']);
    assert.ok(canTransition('Waiting', 'Matched'));
    assert.ok(!canTransition('Waiting', 'Done'));
    assert.ok(!canTransition('Done', 'Running'));
    assert.ok(!canTransition('Nonsense', 'Waiting'));
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`state machine: compare-and-set with history (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { enabled: false } });
      alice = await svc.token('alice');
    });
    after(() => svc?.close());

    const history = async (jid: number) =>
      (await svc.ctx.db.selectFrom('job_status_history').select('status').where('job_id', '=', jid).orderBy('id').execute()).map((r) => r.status);

    it('refuses a transition not in the table before writing anything', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/true' });
      await assert.rejects(changeStatus(svc.ctx.db, new JobEvents(), [jid], { from: JobStatus.Waiting, to: JobStatus.Done, minorStatus: 'x', source: 'test' }), { code: 'invalid_transition' });
      const row = await svc.ctx.db.selectFrom('jobs').select('status').where('job_id', '=', jid).executeTakeFirstOrThrow();
      assert.equal(row.status, 'Waiting');
      assert.deepEqual(await history(jid), ['Received', 'Waiting']);
    });

    it('applies a change only from the expected status: the loser of a race gets nothing', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/true' });
      const [a, b] = await Promise.all([
        changeStatus(svc.ctx.db, new JobEvents(), [jid], { from: JobStatus.Waiting, to: JobStatus.Killed, minorStatus: 'kill', source: 'one' }),
        changeStatus(svc.ctx.db, new JobEvents(), [jid], { from: JobStatus.Waiting, to: JobStatus.Matched, minorStatus: 'match', source: 'two' }),
      ]);
      assert.equal(a.length + b.length, 1, 'exactly one writer wins');
      const row = await svc.ctx.db.selectFrom('jobs').select('status').where('job_id', '=', jid).executeTakeFirstOrThrow();
      assert.equal(row.status, a.length ? 'Killed' : 'Matched');
      assert.deepEqual(await history(jid), ['Received', 'Waiting', row.status]);
    });

    it('changes many jobs in one call and reports which changed', async () => {
      const res = await svc.request('/jobs', { method: 'POST', token: alice, json: [{ Executable: '/bin/true' }, { Executable: '/bin/true' }, { Executable: '/bin/true' }] });
      const jids: number[] = res.json.jids;
      await changeStatus(svc.ctx.db, new JobEvents(), [jids[1]!], { from: JobStatus.Waiting, to: JobStatus.Killed, minorStatus: 'k', source: 't' });
      const won = await changeStatus(svc.ctx.db, new JobEvents(), jids, { from: JobStatus.Waiting, to: JobStatus.Matched, minorStatus: 'm', source: 't' });
      assert.deepEqual(won.sort((x, y) => x - y), [jids[0], jids[2]]);
    });

    it('fits a status longer than minor_status to the column, in the job and its history (PostgreSQL enforces the width)', async () => {
      const jid = await submit(svc, alice, { Executable: '/bin/true' });
      const reason = `Sent back: ${'sbatch: error: '.repeat(60)}`;
      assert.deepEqual(await changeStatus(svc.ctx.db, new JobEvents(), [jid], { from: JobStatus.Waiting, to: JobStatus.Killed, minorStatus: reason, source: 't' }), [jid]);
      const job = await svc.ctx.db.selectFrom('jobs').select('minor_status').where('job_id', '=', jid).executeTakeFirstOrThrow();
      assert.equal([...job.minor_status].length, MINOR_STATUS_WIDTH);
      assert.ok(job.minor_status.endsWith('…') && reason.startsWith(job.minor_status.slice(0, -1)));
      const last = await svc.ctx.db.selectFrom('job_status_history').select('minor_status').where('job_id', '=', jid).orderBy('id', 'desc').executeTakeFirstOrThrow();
      assert.equal(last.minor_status, job.minor_status);
    });
  });
}
