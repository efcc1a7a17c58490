/**
 * A group's registry share (PATCH /registry/groups/{name}) on every dialect: it comes before
 * jobs.fairShare.shares both in GET /jobs/shares and in which group's job the matcher takes first
 * (src/jobs/matching/group-share.ts, the one rule both ask).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Matcher } from '../../src/jobs/matching/matcher.ts';
import { registryShareOf } from '../../src/jobs/matching/group-share.ts';
import { chargeUsage } from '../../src/jobs/matching/usage.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, testRegistry, type TestService } from '../helpers/service.ts';
import { claimant, events, offer } from './matching-kit.ts';
import { submit } from './helpers.ts';

const HALF_LIFE = 24 * 3600_000;

for (const { dialect, skip } of await dialects()) {
  describe(`a group's registry share (${dialect})`, { skip }, () => {
    let svc: TestService;
    let admin: string;
    before(async () => {
      const registry = testRegistry();
      svc = await startTestService({
        dialect,
        config: {
          registry: { ...registry, groups: [...registry.groups, { name: 'vo_admin', members: ['admin'], properties: ['Admin'] }] },
          jobs: {
            // Jobs stay Waiting: only the test's matcher takes them.
            scheduler: { enabled: false },
            sites: [{ name: 'Local', type: 'local', slots: 4 }],
            fairShare: { shares: { lhcb: 3 }, halfLifeMs: HALF_LIFE },
          },
        },
      });
      admin = await svc.token('admin', 'vo_admin');
    });
    after(() => svc?.close());

    const call = async (path: string, method: string, json?: unknown) => {
      const res = await svc.request(path, { method, token: admin, ...(json !== undefined ? { json } : {}) });
      assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
      return res;
    };
    const targets = async (): Promise<Record<string, number>> => {
      const res = await svc.request('/jobs/shares', { token: admin });
      assert.equal(res.status, 200, res.text);
      return Object.fromEntries((res.json.groups as { group: string; target: number }[]).map((g) => [g.group, Math.round(g.target * 100) / 100]));
    };

    it('changes the targets of GET /jobs/shares and which group the matcher serves first', async () => {
      // Two API groups (config groups' shares are the file's), one job each, equal usage so far.
      for (const [group, user] of [['lhcb', 'bob'], ['belle', 'carol']] as const) {
        await call('/registry/groups', 'POST', { name: group });
        await call(`/registry/groups/${group}/members/${user}`, 'PUT', { role: 'member' });
        for (let i = 0; i < 2; i++) await submit(svc, await svc.token(user, group), { Executable: '/bin/true' });
        await chargeUsage(svc.ctx.db, group, user, 10, HALF_LIFE);
      }
      const matcher = new Matcher(svc.ctx.db, events, svc.ctx.dialect, svc.ctx.config.jobs, registryShareOf(svc.ctx));
      const next = async () => {
        const [job] = await matcher.claim(offer('Local', { kind: 'local' }), 1, claimant);
        await matcher.flush();
        return job?.owner;
      };

      // jobs.fairShare.shares: lhcb 3, belle 1.
      assert.deepEqual(await targets(), { lhcb: 0.75, belle: 0.25 });
      assert.equal(await next(), 'bob');

      // The registry's share of belle (9) comes before the file's default of 1; lhcb's registry share
      // (1) before the file's 3.
      await call('/registry/groups/belle', 'PATCH', { share: 9 });
      await call('/registry/groups/lhcb', 'PATCH', { share: 1 });
      assert.deepEqual(await targets(), { lhcb: 0.1, belle: 0.9 });
      assert.equal(await next(), 'carol');

      // Cleared (null), the file's share counts again.
      await call('/registry/groups/lhcb', 'PATCH', { share: null });
      assert.deepEqual(await targets(), { lhcb: 0.25, belle: 0.75 });
    });
  });
}
