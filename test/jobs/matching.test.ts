/**
 * The matcher on every dialect, on a real database: every job goes only where all its requirements are
 * met; a consumable offer takes no more than it has; a processors range gets min(max, free); the task
 * queues' Waiting counts stay exact under concurrent submissions, kills and claims; Priority orders only
 * its owner's jobs.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { Matcher } from '../../src/jobs/matching/matcher.ts';
import { changeStatus } from '../../src/jobs/state-machine.ts';
import { requirementsOf } from '../../src/jobs/requirements.ts';
import { unmetRequirements, type ResourceOffer } from '../../src/protocol/requirements.ts';
import type { Manifest } from '../../src/jobs/manifest.ts';
import { dialects } from '../helpers/dialects.ts';
import type { ScratchDb } from '../helpers/upgrade-db.ts';
import { claimant, config, events, matchingDb, offer, queueCounts, SITES, submitAs } from './matching-kit.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`matching (${dialect})`, { skip }, () => {
    let s: ScratchDb;
    before(async () => {
      s = await matchingDb(dialect);
    });
    after(() => s?.close());
    const clear = async () => {
      await sql`delete from jobs`.execute(s.db);
      await sql`delete from fair_share_usage`.execute(s.db);
    };

    it('gives every job only to an offer that satisfies all its requirements', async () => {
      await clear();
      const asks: Record<string, unknown>[] = [
        {},
        { NumberOfProcessors: 4 },
        { MinNumberOfProcessors: 2, MaxNumberOfProcessors: 8 },
        { MaxRAM: 4000 },
        { NumberOfGPUs: 1, Tags: 'GPU' },
        { Tags: ['cvmfs:lhcb', 'GPU'] },
        { Platform: 'Linux_x86_64_glibc-2.17' },
        { Platform: ['Linux_aarch64_glibc-2.28'] },
        { CPUTime: 100_000 },
        { Sites: ['B'] },
        { BannedSites: ['A'] },
        { Sites: ['A', 'Cluster'], BannedSites: 'Cluster', MaxRAM: 1000 },
        // None of the offers has these.
        { NumberOfProcessors: 32 },
        { Tags: 'nope' },
        { Sites: ['A'], NumberOfGPUs: 1 },
        { Platform: 'Linux_x86_64_glibc-2.40' },
      ];
      await submitAs(s.db, 'alice', 'g', asks.flatMap((a) => Array.from({ length: 3 }, () => a)));
      const offers: ResourceOffer[] = [
        offer('A', { cores: 1, memoryMb: 2000, consumable: false }),
        offer('A', { cores: 4, memoryMb: 8000, cpuTime: 3600, consumable: false }),
        offer('B', { cores: 16, memoryMb: 64000, gpus: 2, tags: ['GPU'], consumable: false }),
        offer('B', { cores: 2, memoryMb: 4000, tags: ['cvmfs:lhcb', 'GPU'], gpus: 1, platform: 'Linux_aarch64_glibc-2.31', consumable: false }),
        offer('Cluster', { cores: 8, memoryMb: 16000, platform: null, cpuTime: 200_000, consumable: false }),
      ];
      const m = new Matcher(s.db, events, dialect, config());
      let taken = 0;
      for (let round = 0; round < 40; round++) {
        for (const o of offers) {
          for (const job of await m.claim(o, 1, claimant)) {
            taken++;
            const req = requirementsOf(job.manifest as Manifest, 'job', SITES);
            assert.deepEqual(unmetRequirements(req, o), [], `job ${job.jobId} (${JSON.stringify(job.manifest)}) went to ${JSON.stringify(o)}`);
            assert.ok(job.processors >= req.minProcessors && job.processors <= Math.min(req.maxProcessors, o.cores));
          }
        }
      }
      // What is left could go to none of the offers.
      const left = await s.db.selectFrom('jobs').select(['manifest']).where('status', '=', 'Waiting').execute();
      for (const r of left) {
        const req = requirementsOf(JSON.parse(r.manifest) as Manifest, 'job', SITES);
        assert.ok(offers.every((o) => unmetRequirements(req, o).length > 0), `job ${r.manifest} fits an offer yet waits`);
      }
      assert.equal(taken + left.length, asks.length * 3);
      assert.ok(left.length > 0 && taken > 0);
    });

    it('fills a consumable 8-core offer with one 8-core job or eight 1-core jobs, never more', async () => {
      await clear();
      const m = new Matcher(s.db, events, dialect, config());
      await submitAs(s.db, 'alice', 'g', Array.from({ length: 3 }, () => ({ NumberOfProcessors: 8 })));
      const big = await m.claim(offer('A', { cores: 8 }), 10, claimant);
      assert.deepEqual(big.map((j) => j.processors), [8]);
      await clear();
      await submitAs(s.db, 'bob', 'g', Array.from({ length: 20 }, () => ({})));
      const small = await m.claim(offer('A', { cores: 8 }), 20, claimant);
      assert.deepEqual(small.map((j) => j.processors), Array(8).fill(1));
      await clear();
      await submitAs(s.db, 'carol', 'g', [...Array.from({ length: 5 }, () => ({ NumberOfProcessors: 3 })), ...Array.from({ length: 5 }, () => ({ MaxRAM: 3000 }))]);
      const mixed = await m.claim(offer('A', { cores: 8, memoryMb: 8000 }), 20, claimant);
      assert.ok(mixed.reduce((n, j) => n + j.processors, 0) <= 8);
      const ram = mixed.filter((j) => j.manifest.MaxRAM !== undefined).length * 3000;
      assert.ok(ram <= 8000 && mixed.length > 1, JSON.stringify(mixed.map((j) => j.manifest)));
      // A batch (non-consumable) partition measures every job against the whole.
      await clear();
      await submitAs(s.db, 'dave', 'g', Array.from({ length: 5 }, () => ({ NumberOfProcessors: 8 })));
      assert.equal((await m.claim(offer('A', { cores: 8, consumable: false }), 5, claimant)).length, 5);
    });

    it('gives a processors range as many as are free, up to its maximum, and records it', async () => {
      await clear();
      const m = new Matcher(s.db, events, dialect, config());
      const ids = await submitAs(s.db, 'alice', 'g', Array.from({ length: 3 }, () => ({ MinNumberOfProcessors: 2, MaxNumberOfProcessors: 6 })));
      assert.deepEqual((await m.claim(offer('A', { cores: 4 }), 1, claimant)).map((j) => j.processors), [4]);
      assert.deepEqual((await m.claim(offer('A', { cores: 16 }), 1, claimant)).map((j) => j.processors), [6]);
      assert.deepEqual(await m.claim(offer('A', { cores: 1 }), 1, claimant), []);
      // A consumable 9-core offer: 6, then the 3 left.
      await submitAs(s.db, 'alice', 'g', [{ MinNumberOfProcessors: 2, MaxNumberOfProcessors: 6 }]);
      assert.deepEqual((await m.claim(offer('A', { cores: 9 }), 5, claimant)).map((j) => j.processors), [6, 3]);
      const stored = await s.db.selectFrom('jobs').select(['job_id', 'processors']).where('job_id', 'in', ids.slice(0, 2)).orderBy('job_id').execute();
      assert.deepEqual(stored.map((r) => r.processors), [4, 6]);
    });

    it('keeps task_queues.waiting exact under concurrent submissions, kills and claims', async () => {
      await clear();
      const shapes = [{}, { NumberOfProcessors: 2 }, { Tags: 'GPU' }, { Sites: ['B'] }];
      const submissions = Array.from({ length: 24 }, (_, i) =>
        submitAs(s.db, `u${i % 3}`, `g${i % 2}`, Array.from({ length: 10 + i }, (_, k) => ({ ...shapes[(i + k) % shapes.length], Priority: k % 5 }))),
      );
      const m1 = new Matcher(s.db, events, dialect, config());
      const m2 = new Matcher(s.db, events, dialect, config());
      const claims: Promise<unknown>[] = [];
      const kills: Promise<unknown>[] = [];
      for (let i = 0; i < 30; i++) {
        claims.push((i % 2 ? m1 : m2).claim(offer(i % 3 ? 'A' : 'B', { cores: 4, tags: ['GPU'] }), 3, claimant));
      }
      const ids = (await Promise.all(submissions)).flat();
      for (let i = 0; i < ids.length; i += 7) kills.push(changeStatus(s.db, events, [ids[i]!], { from: ['Waiting', 'Matched'], to: 'Killed', minorStatus: 'Killed by the test', source: 'Test' }));
      for (let i = 0; i < 30; i++) claims.push((i % 2 ? m1 : m2).claim(offer('A', { cores: 2 }), 2, claimant));
      await Promise.all([...claims, ...kills]);
      const { rows, kept } = await queueCounts(s.db);
      assert.deepEqual(kept, rows);
      assert.ok([...rows.values()].reduce((a, b) => a + b, 0) > 0);
    });

    it("orders by Priority only the owner's own jobs", async () => {
      await clear();
      const m = new Matcher(s.db, events, dialect, config());
      const low = await submitAs(s.db, 'bob', 'g', Array.from({ length: 20 }, () => ({ Priority: 0 })));
      const high = await submitAs(s.db, 'alice', 'g', Array.from({ length: 20 }, (_, i) => ({ Priority: i % 4 === 0 ? 10 : 1, NumberOfProcessors: i % 2 ? 1 : 2 })));
      const got: number[] = [];
      for (let i = 0; i < 20; i++) got.push(...(await m.claim(offer('A', { cores: 2, consumable: false }), 1, claimant)).map((j) => j.jobId));
      // Alice's high Priority takes nothing from bob: usage (processors) decides between them.
      const aliceGot = got.filter((j) => high.includes(j));
      const bobGot = got.filter((j) => low.includes(j));
      assert.ok(bobGot.length >= 8 && aliceGot.length >= 6, `alice ${aliceGot.length}, bob ${bobGot.length}`);
      // Alice's own come highest Priority first (Priority 10 are her jobs 0, 4, 8, 12, 16), then oldest.
      const tens = high.filter((_, i) => i % 4 === 0);
      assert.deepEqual(aliceGot.slice(0, 5), tens);
      assert.deepEqual(bobGot, [...bobGot].sort((a, b) => a - b));
    });
  });
}
