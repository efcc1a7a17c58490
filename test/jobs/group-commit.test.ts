/**
 * Group commit of submissions (src/jobs/group-commit.ts): the queue's rules on their own, then concurrent
 * submissions on both dialects, through the API and through the store, with bad submissions among them.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService } from './helpers.ts';
import { GroupCommit } from '../../src/jobs/group-commit.ts';
import { insertJobs, submissionQueue, type Submitter } from '../../src/jobs/store.ts';
import { JobEvents } from '../../src/jobs/lifecycle/job-events.ts';
import type { CheckedManifest, Manifest } from '../../src/jobs/manifest.ts';
import { requirementsOf } from '../../src/jobs/requirements.ts';

describe('group commit: the queue', () => {
  /** A queue over a fake transaction that records its batches and fails as told. */
  function fake(fail: (items: readonly string[]) => 'before' | 'commit' | undefined = () => undefined, bound = 5) {
    const batches: string[][] = [];
    const gates: (() => void)[] = [];
    const queue = new GroupCommit<string, string>(
      async (items, committing) => {
        batches.push([...items]);
        await new Promise<void>((r) => gates.push(r));
        const how = fail(items);
        if (how === 'before') throw new Error(`bad batch ${items.join(',')}`);
        committing();
        if (how === 'commit') throw new Error('connection lost during COMMIT');
        return items.map((i) => `ok ${i}`);
      },
      (item) => Number(item.split(':')[1] ?? 1),
      bound,
    );
    /** Lets the transactions in flight finish, until the queue is empty. */
    const settle = async () => {
      for (let i = 0; i < 100; i++) {
        await new Promise((r) => setImmediate(r));
        gates.splice(0).forEach((g) => g());
      }
    };
    return { queue, batches, settle };
  }

  it('starts a lone submission at once, and batches what queued meanwhile within the bound', async () => {
    const { queue, batches, settle } = fake();
    const a = queue.submit('a');
    assert.deepEqual(batches, [['a']], 'no waiting for company');
    const rest = ['b', 'c:3', 'd', 'e:2', 'f'].map((x) => queue.submit(x));
    await settle();
    assert.deepEqual(await Promise.all([a, ...rest]), ['ok a', 'ok b', 'ok c:3', 'ok d', 'ok e:2', 'ok f']);
    // At most 5 jobs per transaction, in arrival order.
    assert.deepEqual(batches, [['a'], ['b', 'c:3', 'd'], ['e:2', 'f']]);
    assert.deepEqual(queue.stats, { transactions: 3, batched: 2, largestBatch: 3, retriedAlone: 0 });
  });

  it('after a transaction that never yields (node:sqlite), batches what arrives in the same event-loop turn', async () => {
    const batches: string[][] = [];
    const queue = new GroupCommit<string, string>(
      async (items, committing) => {
        batches.push([...items]);
        committing();
        return items.map((i) => `ok ${i}`);
      },
      () => 1,
      100,
    );
    assert.equal(await queue.submit('a'), 'ok a');
    assert.deepEqual(batches, [['a']]);
    // Still the turn in which 'a' committed: these wait for its end (no timer), then share a transaction.
    const [b, c] = [queue.submit('b'), queue.submit('c')];
    assert.deepEqual(batches, [['a']]);
    assert.deepEqual(await Promise.all([b, c]), ['ok b', 'ok c']);
    assert.deepEqual(batches, [['a'], ['b', 'c']]);
    // A later, lone submission starts at once.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    void queue.submit('d');
    assert.deepEqual(batches, [['a'], ['b', 'c'], ['d']]);
  });

  it('takes a submission larger than the bound alone', async () => {
    const { queue, batches, settle } = fake();
    const all = ['a', 'big:9', 'c'].map((x) => queue.submit(x));
    await settle();
    await Promise.all(all);
    assert.deepEqual(batches, [['a'], ['big:9'], ['c']]);
  });

  it('retries each submission of a failed batch alone: only the bad one fails', async () => {
    const { queue, batches, settle } = fake((items) => (items.includes('bad') ? 'before' : undefined));
    const all = ['a', 'b', 'bad', 'c'].map((x) => queue.submit(x).then((v) => v, (e: Error) => e.message));
    await settle();
    assert.deepEqual(await Promise.all(all), ['ok a', 'ok b', 'bad batch bad', 'ok c']);
    assert.deepEqual(batches, [['a'], ['b', 'bad', 'c'], ['b'], ['bad'], ['c']]);
    assert.equal(queue.stats.retriedAlone, 3);
  });

  it('does not retry a batch whose COMMIT failed (it may have been stored): each caller gets the error', async () => {
    const { queue, batches, settle } = fake((items) => (items.length > 1 ? 'commit' : undefined));
    const all = ['a', 'b', 'c'].map((x) => queue.submit(x).then((v) => v, (e: Error) => e.message));
    await settle();
    assert.deepEqual(await Promise.all(all), ['ok a', 'connection lost during COMMIT', 'connection lost during COMMIT']);
    assert.deepEqual(batches, [['a'], ['b', 'c']]);
    // And the queue goes on.
    const d = queue.submit('d');
    await settle();
    assert.equal(await d, 'ok d');
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`group commit: concurrent submissions (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let bob: string;
    let admin: string;
    before(async () => {
      svc = await startJobsService(dialect, { scheduler: { enabled: false } });
      alice = await svc.token('alice');
      bob = await svc.token('bob');
      admin = await svc.token('admin', 'dirigo_admin');
    });
    after(() => svc?.close());

    async function history(jid: number): Promise<string[]> {
      const job = await svc.request(`/jobs/${jid}`, { token: admin });
      assert.equal(job.status, 200, job.text);
      return (job.json.StatusHistory as { Status: string }[]).map((h) => h.Status);
    }

    it('gives 60 concurrent API submissions (single, bulk, parametric with %j) their own ids, rows, history and counts', { timeout: 120000 }, async () => {
      const before = submissionQueue(svc.ctx.db).stats.transactions;
      const sent = Array.from({ length: 60 }, (_, i) => {
        const group = `gc-${i}`;
        const body =
          i % 3 === 0
            ? { Executable: '/bin/true', JobGroup: group }
            : i % 3 === 1
              ? Array.from({ length: 4 }, () => ({ Executable: '/bin/true', JobGroup: group }))
              : { Executable: '/bin/echo', Arguments: '%s', JobName: 'p-%j', JobGroup: group, Parameters: ['x', 'y', 'z'] };
        return { group, n: i % 3 === 0 ? 1 : i % 3 === 1 ? 4 : 3, owner: i % 2 ? 'bob' : 'alice', body };
      });
      const answers = await Promise.all(sent.map((s) => svc.request('/jobs', { method: 'POST', token: s.owner === 'bob' ? bob : alice, json: s.body })));
      const all: number[] = [];
      for (const [i, res] of answers.entries()) {
        assert.equal(res.status, 201, res.text);
        const jids = res.json.jids as number[];
        assert.equal(jids.length, sent[i]!.n, sent[i]!.group);
        all.push(...jids);
        const rows = await svc.ctx.db.selectFrom('jobs').select(['job_id', 'job_group', 'owner', 'job_name', 'status']).where('job_id', 'in', jids).orderBy('job_id').execute();
        assert.deepEqual(rows.map((r) => Number(r.job_id)), [...jids].sort((a, b) => a - b));
        for (const r of rows) {
          assert.equal(r.job_group, sent[i]!.group);
          assert.equal(r.owner, sent[i]!.owner);
          assert.equal(r.status, 'Waiting');
          // `%j` filled with each job's own id.
          if (i % 3 === 2) assert.equal(r.job_name, `p-${r.job_id}`);
        }
      }
      assert.equal(new Set(all).size, all.length, 'every job its own id');
      assert.equal(all.length, 20 * (1 + 4 + 3));
      for (const jid of all.filter((_, k) => k % 7 === 0)) assert.deepEqual(await history(jid), ['Received', 'Waiting']);
      const histories = await svc.ctx.db.selectFrom('job_status_history').select((eb) => eb.fn.countAll<number>().as('n')).where('job_id', 'in', all).executeTakeFirstOrThrow();
      assert.equal(Number(histories.n), 2 * all.length);
      // The counts the triggers keep saw every job.
      const summary = await svc.request('/jobs/summary?groupBy=Status&allOwners=true', { token: admin });
      assert.equal(summary.status, 200, summary.text);
      const waiting = (summary.json.summary as { Status: string; count: number }[]).find((r) => r.Status === 'Waiting');
      assert.equal(waiting?.count, all.length, JSON.stringify(summary.json));
      // On PostgreSQL, fewer transactions than submissions: some were shared. (On SQLite they share one
      // only when they arrive in the same event-loop turn, which this in-process client does not ensure.)
      const used = submissionQueue(svc.ctx.db).stats.transactions - before;
      if (dialect === 'postgres') assert.ok(used < sent.length, `${used} transactions for ${sent.length} submissions`);
    });

    // With `%j` in a batch, PostgreSQL takes the transaction (BEGIN, INSERTs, UPDATE, COMMIT); without, one statement.
    for (const percentJ of [true, false]) {
      it(`fails only the bad submissions of a shared transaction, each with its own error (${percentJ ? 'with' : 'without'} %j)`, { timeout: 60000 }, async () => {
        const queue = submissionQueue(svc.ctx.db);
        const { retriedAlone } = queue.stats;
        const who: Submitter = { username: 'alice', dn: '/CN=alice', group: 'dirigo_user', setup: 'Dirigo-Test' };
        const job = (m: Record<string, unknown>): CheckedManifest => ({ manifest: { Executable: '/bin/true', ...m } as Manifest, argv: [], sites: null, requirements: requirementsOf({ Executable: '/bin/true' }, 'test', []) });
        type Sent = { who: Submitter; jobs: CheckedManifest[]; bad?: RegExp };
        const sent: Sent[] = [];
        for (let i = 0; i < 12; i++) sent.push({ who, jobs: [job({ JobGroup: `ok-${i}-${percentJ}` }), job({ JobGroup: `ok-${i}-${percentJ}`, JobName: percentJ ? 'n-%j' : 'n' })] });
        // A manifest the store cannot serialise: fails the shared transaction, on both dialects (on
        // PostgreSQL without %j, the database's own refusal below is left alone in its batch).
        if (percentJ || dialect === 'sqlite') sent.splice(3, 0, { who, jobs: [job({ JobGroup: `bad-bigint-${percentJ}` }), job({ JobGroup: `bad-bigint-${percentJ}`, Custom: 1n })], bad: /BigInt/ });
        if (dialect === 'postgres') {
          // A row the database refuses (owner_group is varchar(64)): SQLite does not enforce the length.
          sent.splice(8, 0, { who: { ...who, group: 'g'.repeat(65) }, jobs: [job({ JobGroup: `bad-long-${percentJ}` })], bad: /too long/ });
        }
        const results = await Promise.allSettled(sent.map((s) => insertJobs(svc.ctx.db, new JobEvents(), s.who, s.jobs, undefined)));
        const ids: number[] = [];
        for (const [i, r] of results.entries()) {
          const s = sent[i]!;
          if (s.bad) {
            assert.equal(r.status, 'rejected', `submission ${i} should fail`);
            assert.match(String((r as PromiseRejectedResult).reason), s.bad);
            continue;
          }
          assert.equal(r.status, 'fulfilled', `submission ${i}: ${String((r as PromiseRejectedResult).reason)}`);
          const jids = (r as PromiseFulfilledResult<number[]>).value;
          assert.equal(jids.length, 2);
          ids.push(...jids);
          const rows = await svc.ctx.db.selectFrom('jobs').select(['job_id', 'job_group', 'job_name']).where('job_id', 'in', jids).orderBy('job_id').execute();
          assert.deepEqual(rows.map((row) => row.job_group), [s.jobs[0]!.manifest.JobGroup, s.jobs[0]!.manifest.JobGroup]);
          assert.equal(rows[1]!.job_name, percentJ ? `n-${rows[1]!.job_id}` : 'n');
          for (const jid of jids) assert.deepEqual(await history(jid), ['Received', 'Waiting']);
        }
        assert.equal(new Set(ids).size, 24);
        // Nothing of the bad ones was stored, and their batch was indeed shared and retried alone.
        const stored = await svc.ctx.db.selectFrom('jobs').select('job_id').where('job_group', 'in', [`bad-bigint-${percentJ}`, `bad-long-${percentJ}`]).execute();
        assert.equal(stored.length, 0);
        assert.ok(queue.stats.retriedAlone > retriedAlone, 'a shared transaction failed and its submissions were retried alone');
      });
    }
  });
}
