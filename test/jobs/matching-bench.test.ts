/**
 * The matching bench's harness (bench/lib/matching.ts, bench/scale/matching.ts) at its smallest: the seeded
 * task queues and jobs agree with each other as the contract encodes them, claimers run and are checked,
 * and the bench's command prints its figures. Seconds, so it runs with the suite.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import { freshDatabase, offerOf, offerViolations, runClaimers, seed, shareErrors, type BenchDb } from '../../bench/lib/matching.ts';
import { requirementsOf } from '../../src/jobs/requirements.ts';
import { requirementsKey, type Requirements } from '../../src/protocol/requirements.ts';
import type { ClaimedJob } from '../../src/jobs/lifecycle/claim.ts';
import type { Manifest } from '../../src/jobs/manifest.ts';

const JOBS = 600;
const QUEUES = 60;

describe('matching bench: its checks', () => {
  it('counts a match that breaks its offer', () => {
    const match = (manifest: Record<string, unknown>, processors: number): ClaimedJob => ({ jobId: 1, manifest: { Executable: '/bin/true', ...manifest }, inputSandbox: null, owner: 'u', ownerGroup: 'g', rescheduleCounter: 0, processors });
    const offer = { ...offerOf(2), cores: 4, consumable: true, tags: [], gpus: 0 };
    assert.equal(offerViolations(offer, [match({ NumberOfProcessors: 2 }, 2)]), 0);
    assert.equal(offerViolations(offer, [match({ NumberOfProcessors: 16 }, 16)]), 2, 'a requirement unmet, and more than the offer has');
    assert.equal(offerViolations(offer, [match({ NumberOfProcessors: 2 }, 2), match({ NumberOfProcessors: 3 }, 3)]), 1, 'together more than the offer has');
    assert.equal(offerViolations(offer, [match({ Tags: ['GPU'] }, 1)]), 1);
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`matching bench harness (${dialect})`, { skip }, () => {
    let b: BenchDb;
    before(async () => {
      b = await freshDatabase(dialect, 10);
      await seed(b, JOBS, QUEUES);
    });
    after(() => b?.close());

    it('seeds task queues and jobs that agree: owner, requirements, hash, columns and waiting counts', async () => {
      const queues = await b.db.selectFrom('task_queues').selectAll().execute();
      assert.equal(queues.length, QUEUES);
      assert.equal(queues.reduce((s, q) => s + Number(q.waiting), 0), JOBS);
      assert.ok(new Set(queues.map((q) => q.owner_group)).size >= 2);
      const jobs = await b.db.selectFrom('jobs').select(['tq_id', 'owner', 'owner_group', 'job_type', 'processors', 'max_ram', 'gpus', 'tags', 'platform', 'cpu_time', 'manifest', 'status']).execute();
      assert.equal(jobs.length, JOBS);
      const byId = new Map(queues.map((q) => [Number(q.tq_id), q]));
      const perQueue = new Map<number, number>();
      for (const j of jobs) {
        const q = byId.get(Number(j.tq_id))!;
        assert.ok(q, `job's tq_id ${j.tq_id}`);
        perQueue.set(Number(j.tq_id), (perQueue.get(Number(j.tq_id)) ?? 0) + 1);
        assert.deepEqual([j.status, j.owner, j.owner_group, j.job_type], ['Waiting', q.owner, q.owner_group, q.job_type]);
        assert.deepEqual([j.processors, j.max_ram, j.gpus, Number(j.cpu_time)], [q.min_processors, q.max_ram, q.gpus, Number(q.cpu_time)]);
        assert.equal(`,${j.tags},`.replace(',,', ''), q.tags);
        assert.equal(`,${j.platform},`.replace(',,', ''), q.platforms);
        const req: Requirements = JSON.parse(q.requirements) as Requirements;
        assert.deepEqual(requirementsOf(JSON.parse(j.manifest) as Manifest, 'job', ['Bench']), req);
        assert.equal(q.req_hash, createHash('sha256').update(requirementsKey(req)).digest('hex'));
      }
      for (const q of queues) assert.equal(Number(q.waiting), perQueue.get(Number(q.tq_id)) ?? 0);
    });

    it('runs concurrent claimers and measures them', async () => {
      const run = await runClaimers(b, { claimers: 8, batch: 4, matches: 100, seconds: 20 });
      assert.ok(run.matched >= 100, `matched ${run.matched}`);
      assert.equal(run.doubles, 0);
      assert.ok(run.claims > 0 && run.p99Ms >= run.p50Ms && run.perSecond > 0);
      assert.equal(shareErrors(run).length, 3);
    });
  });
}

describe('matching bench command', () => {
  it('prints its figures at the smallest size', { timeout: 60_000 }, () => {
    const root = join(import.meta.dirname, '../..');
    const out = spawnSync(process.execPath, ['bench/scale/matching.ts', '--sizes', '400', '--queues', '40', '--matches', '100', '--claimers', '4', '--dialect', 'sqlite'], { cwd: root, encoding: 'utf8' });
    assert.equal(out.status, 0, out.stderr);
    assert.match(out.stdout, /jobs\/s +p50 ms +p99 ms/);
    assert.match(out.stdout, /fair share over [\d,]+ matches at 400 \(processors\): .*calib/);
    assert.match(out.stderr, /\[sqlite 400\] inserted 400 \/ 400 Waiting jobs/);
  });
});
