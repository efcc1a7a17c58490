/**
 * Fair share on every dialect: two groups with shares 3:1, two users in the first, thousands of jobs
 * each submitted in any order and with any Priority, get the slots in those proportions (±5 %); usage
 * decays with its half-life and is shared between instances.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { Matcher } from '../../src/jobs/matching/matcher.ts';
import { chargeUsage, readUsage } from '../../src/jobs/matching/usage.ts';
import { dialects } from '../helpers/dialects.ts';
import type { ScratchDb } from '../helpers/upgrade-db.ts';
import { claimant, config, events, matchingDb, offer, submitAs } from './matching-kit.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`fair share (${dialect})`, { skip }, () => {
    let s: ScratchDb;
    before(async () => {
      s = await matchingDb(dialect);
    });
    after(() => s?.close());

    it('shares 3:1 between groups and equally between a group\'s users, whatever the order and Priority', async () => {
      // Bob (the small group) submits first and with the highest Priority; carol's jobs are 2-core.
      await submitAs(s.db, 'bob', 'small', Array.from({ length: 3000 }, (_, i) => ({ Priority: 5 + (i % 3) })));
      await submitAs(s.db, 'alice', 'big', Array.from({ length: 3000 }, (_, i) => ({ Priority: i % 2, Tags: i % 3 ? 'x' : [] })));
      await submitAs(s.db, 'carol', 'big', Array.from({ length: 3000 }, () => ({ NumberOfProcessors: 2 })));
      const shares = { big: 3, small: 1 };
      const m1 = new Matcher(s.db, events, dialect, config({ fairShare: { shares, halfLifeMs: 24 * 3600_000 } }));
      const m2 = new Matcher(s.db, events, dialect, config({ fairShare: { shares, halfLifeMs: 24 * 3600_000 } }));
      const got: { owner: string; processors: number }[] = [];
      const claimer = async (m: Matcher) => {
        for (let i = 0; i < 250; i++) got.push(...(await m.claim(offer('A', { cores: 2, tags: ['x'], consumable: false }), 4, claimant)));
      };
      await Promise.all([claimer(m1), claimer(m2), claimer(m1), claimer(m2)]);
      await m1.flush();
      await m2.flush();
      const used = (who: string[]) => got.filter((j) => who.includes(j.owner)).reduce((n, j) => n + j.processors, 0);
      const all = used(['alice', 'bob', 'carol']);
      assert.ok(got.length >= 2000, `${got.length} claimed`);
      const big = used(['alice', 'carol']) / all;
      assert.ok(Math.abs(big - 0.75) <= 0.05, `big got ${big}`);
      const alice = used(['alice']) / used(['alice', 'carol']);
      assert.ok(Math.abs(alice - 0.5) <= 0.05, `alice got ${alice} of big`);
      // The usage written matches what was matched (no decay to speak of within a day's half-life).
      const usage = await readUsage(s.db, 24 * 3600_000);
      const of = (g: string, u: string) => usage.find((x) => x.group === g && x.user === u)?.usage ?? 0;
      assert.ok(Math.abs(of('big', '') - used(['alice', 'carol'])) < 1);
      assert.ok(Math.abs(of('small', 'bob') - used(['bob'])) < 1);
    });

    it('decays usage with the half-life', async () => {
      await sql`delete from fair_share_usage`.execute(s.db);
      await chargeUsage(s.db, 'g', 'u', 8, 60_000);
      const hourAgo = new Date(Date.now() - 3600_000).toISOString();
      await s.db.updateTable('fair_share_usage').set({ updated_at: new Date(Date.now() - 60_000).toISOString() }).execute();
      const [g] = (await readUsage(s.db, 60_000)).filter((x) => x.user === '');
      assert.ok(Math.abs(g!.usage - 4) < 0.05, `${g!.usage}`);
      // A charge decays what was there to its own time, then adds.
      await chargeUsage(s.db, 'g', 'u', 2, 60_000);
      const [after1] = (await readUsage(s.db, 60_000)).filter((x) => x.user === 'u');
      assert.ok(Math.abs(after1!.usage - 6) < 0.05, `${after1!.usage}`);
      await s.db.updateTable('fair_share_usage').set({ updated_at: hourAgo }).execute();
      assert.ok((await readUsage(s.db, 60_000)).every((x) => x.usage < 1e-9));
    });
  });
}
