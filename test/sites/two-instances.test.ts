/**
 * Issue 34: a ban holds across instances. Two services on one database (each its own process state and
 * so its own ban cache): a ban through one is obeyed by activeBans on the other within BAN_CACHE_MS and a
 * little; the unban too. The other instance's GET /sites, which reads the table, shows it at once.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { activeBans, BAN_CACHE_MS } from '../../src/sites/index.ts';
import { startSitesService } from './helpers.ts';

/** Milliseconds until `other`'s activeBans satisfies `done`, failing past BAN_CACHE_MS plus a margin. */
async function seenWithin(other: TestService, done: (sites: string[]) => boolean): Promise<number> {
  const started = Date.now();
  for (;;) {
    const sites = (await activeBans(other.ctx.db)).map((b) => b.site);
    if (done(sites)) return Date.now() - started;
    assert.ok(Date.now() - started < BAN_CACHE_MS + 1500, `the other instance still sees ${JSON.stringify(sites)}`);
    await sleep(50);
  }
}

for (const { dialect, skip } of await dialects()) {
  describe(`sites: a ban holds on every instance within seconds (${dialect})`, { skip }, () => {
    let a: TestService;
    let b: TestService;
    let bob: string;
    before(async () => {
      a = await startSitesService(dialect);
      b = await startSitesService(dialect, { sharing: a });
      bob = await a.token('bob', 'dirigo_sites');
    });
    after(async () => {
      await b?.close();
      await a?.close();
    });

    it('bans through A, B obeys within the cache time; unbans through B, A obeys', async () => {
      // B has read the bans (none) and holds them in its cache.
      assert.deepEqual(await activeBans(b.ctx.db), []);
      const res = await a.request('/sites/CERN/ban', { method: 'POST', token: bob, json: { reason: 'downtime' } });
      assert.equal(res.status, 200, res.text);
      const seen = await seenWithin(b, (s) => s.includes('CERN'));
      assert.ok(seen <= BAN_CACHE_MS + 1500, `seen after ${seen} ms`);
      const listed = await b.request('/sites', { token: await b.token('alice') });
      assert.equal(listed.json.sites.find((s: { name: string }) => s.name === 'CERN').status, 'Banned');

      assert.deepEqual((await activeBans(a.ctx.db)).map((x) => x.site), ['CERN']);
      const lifted = await b.request('/sites/CERN/unban', { method: 'POST', token: await b.token('bob', 'dirigo_sites'), json: { reason: 'back' } });
      assert.equal(lifted.status, 200, lifted.text);
      await seenWithin(a, (s) => s.length === 0);
    });

    it('answers activeBans from memory between refreshes: many calls, few queries', async () => {
      let queries = 0;
      const spy = b.ctx.db.withPlugin({
        transformQuery: (args) => {
          queries++;
          return args.node;
        },
        transformResult: async (args) => args.result,
      });
      // A new Kysely instance has its own cache entry: count the queries it makes.
      for (let i = 0; i < 200; i++) await activeBans(spy);
      assert.equal(queries, 1);
    });
  });
}
