/**
 * Running limits and bans hold with two matchers (two instances: on PostgreSQL two connection pools on one
 * database) claiming concurrently.
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
  });
}
