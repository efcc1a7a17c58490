/**
 * Running limits and bans hold, and every job is taken once and recorded with its own claimant, with two
 * matchers (two instances: on PostgreSQL two connection pools on one database) claiming concurrently.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openDatabase, type Db } from '../../src/kernel/db/database.ts';
import { Matcher } from '../../src/jobs/matching/matcher.ts';
import { activeBans } from '../../src/sites/index.ts';
import { ban } from '../../src/sites/site-status.ts';
import { changeStatus } from '../../src/jobs/state-machine.ts';
import { POSTGRES_URL, dialects } from '../helpers/dialects.ts';
import type { ScratchDb } from '../helpers/upgrade-db.ts';
import { claimant, config, events, matchingDb, offer, submitAs } from './matching-kit.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`limits and bans across instances (${dialect})`, { skip }, () => {
    let s: ScratchDb;
    let other: Db;
    before(async () => {
      s = await matchingDb(dialect);
      if (dialect === 'postgres') {
        const schema = (await sql<{ s: string }>`select current_schema() as s`.execute(s.db)).rows[0]!.s;
        other = openDatabase(POSTGRES_URL, { schema }).db;
      } else {
        other = s.db;
      }
    });
    after(async () => {
      if (other && other !== s?.db) await other.destroy();
      await s?.close();
    });

    it('never holds more jobs at a site than its running limits allow', async () => {
      const cfg = config({ sites: [{ name: 'Cluster', type: 'agent', runningLimits: { JobType: { User: 7 }, Owner: { bob: 3 } } }] as never });
      await submitAs(s.db, 'alice', 'g', Array.from({ length: 40 }, () => ({})));
      await submitAs(s.db, 'bob', 'g', Array.from({ length: 40 }, () => ({ JobType: 'MCSimulation' })));
      await submitAs(s.db, 'carol', 'g', Array.from({ length: 40 }, () => ({ JobType: 'MCSimulation' })));
      const matchers = [new Matcher(s.db, events, dialect, cfg), new Matcher(other, events, dialect, cfg)];
      const held = async () => {
        const rows = await s.db.selectFrom('jobs').select(['owner', 'job_type']).where('site', '=', 'Cluster').where('status', 'in', ['Matched', 'Running', 'Completing']).execute();
        return { user: rows.filter((r) => r.job_type === 'User').length, bob: rows.filter((r) => r.owner === 'bob').length, carol: rows.filter((r) => r.owner === 'carol').length };
      };
      const burst = () => Promise.all(Array.from({ length: 32 }, (_, i) => matchers[i % 2]!.claim(offer('Cluster', { cores: 2 }), 2, claimant)));
      await burst();
      assert.deepEqual(await held(), { user: 7, bob: 3, carol: (await held()).carol });
      assert.ok((await held()).carol > 5);
      // Jobs that end make room, and only that much.
      const ended = await s.db.selectFrom('jobs').select('job_id').where('owner', '=', 'alice').where('status', '=', 'Matched').limit(2).execute();
      await changeStatus(s.db, events, ended.map((r) => Number(r.job_id)), { from: 'Matched', to: 'Failed', minorStatus: 'ended by the test', source: 'Test' });
      await burst();
      const h = await held();
      assert.equal(h.user, 7);
      assert.equal(h.bob, 3);
      // Elsewhere the limits of Cluster do not apply.
      const elsewhere = await matchers[0]!.claim(offer('A', { cores: 8 }), 8, claimant);
      assert.ok(elsewhere.some((j) => j.owner === 'bob') && elsewhere.some((j) => j.owner === 'alice'));
    });

    it('gives a banned site or resource nothing, on every instance within seconds', async () => {
      await sql`delete from jobs`.execute(s.db);
      await submitAs(s.db, 'alice', 'g', Array.from({ length: 20 }, () => ({})));
      const matchers = [new Matcher(s.db, events, dialect, config()), new Matcher(other, events, dialect, config())];
      // Through one instance's database handle; the other instance's cache learns of them within seconds.
      await ban(s.db, { site: 'A', reason: 'test', by: 'admin' });
      await ban(s.db, { site: 'B', resource: 'node1', reason: 'test', by: 'admin' });
      assert.equal((await activeBans(s.db)).length, 2);
      await new Promise((r) => setTimeout(r, 2100));
      const claims = await Promise.all(Array.from({ length: 16 }, (_, i) => matchers[i % 2]!.claim(offer(i % 4 === 0 ? 'A' : 'B', { resource: 'node1' }), 1, claimant)));
      assert.equal(claims.flat().length, 0);
      assert.equal((await matchers[1]!.claim(offer('B', { resource: 'node2' }), 1, claimant)).length, 1);
    });

    it('takes every job once under concurrent claims, each recorded with its own claimant, site and processors', async () => {
      await sql`delete from site_status`.execute(s.db);
      await sql`delete from jobs`.execute(s.db);
      // Several users and queues (fixed sizes and a range), so that concurrent claims share queues and statements.
      for (const user of ['ann', 'ben', 'cid']) {
        await submitAs(s.db, user, user === 'cid' ? 'h' : 'g', [
          ...Array.from({ length: 20 }, (_, i) => ({ Priority: i % 3 })),
          ...Array.from({ length: 10 }, () => ({ NumberOfProcessors: 2 })),
          ...Array.from({ length: 10 }, () => ({ MinNumberOfProcessors: 1, MaxNumberOfProcessors: 4 })),
        ]);
      }
      const matchers = [new Matcher(s.db, events, dialect, config()), new Matcher(other, events, dialect, config())];
      const who = (i: number) => ({ ...claimant, executorId: `agent:c${i}`, executorRef: `ref-${i}`, minorStatus: `Matched by c${i}`, source: `Source${i}` });
      const got = new Map<number, { claimer: number; site: string; processors: number }>();
      for (let round = 0; round < 6; round++) {
        const claims = await Promise.all(
          Array.from({ length: 24 }, (_, i) => matchers[i % 2]!.claim(offer(i % 3 === 0 ? 'A' : 'B', { cores: 1 + (i % 4), consumable: i % 2 === 0 }), 3, who(i))),
        );
        claims.forEach((jobs, i) => {
          for (const j of jobs) {
            assert.ok(!got.has(j.jobId), `job ${j.jobId} matched twice`);
            got.set(j.jobId, { claimer: i, site: i % 3 === 0 ? 'A' : 'B', processors: j.processors });
          }
        });
      }
      assert.equal(got.size, 120);
      const rows = await s.db.selectFrom('jobs').select(['job_id', 'status', 'site', 'executor_id', 'executor_ref', 'minor_status', 'processors']).execute();
      for (const r of rows) {
        const g = got.get(Number(r.job_id))!;
        assert.deepEqual(
          { status: r.status, site: r.site, executor: r.executor_id, ref: r.executor_ref, minor: r.minor_status, processors: r.processors },
          { status: 'Matched', site: g.site, executor: `agent:c${g.claimer}`, ref: `ref-${g.claimer}`, minor: `Matched by c${g.claimer}`, processors: g.processors },
        );
      }
      // The earlier tests' jobs left their history behind.
      const history = await s.db.selectFrom('job_status_history').select(['job_id', 'minor_status', 'source']).where('status', '=', 'Matched').where('job_id', 'in', [...got.keys()]).execute();
      assert.equal(history.length, 120);
      for (const h of history) {
        const g = got.get(Number(h.job_id))!;
        assert.deepEqual({ minor: h.minor_status, source: h.source }, { minor: `Matched by c${g.claimer}`, source: `Source${g.claimer}` });
      }
    });
  });
}
