/**
 * Why a job waits (src/jobs/matching/explain.ts) and the shares (shares.ts), on seeded rows of a real
 * database of each dialect. Bans and resource descriptions come through the injected dependencies, so the
 * verdicts are tested whatever the sites domain stores.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dialects } from '../helpers/dialects.ts';
import { scratchDatabase, type ScratchDb } from '../helpers/upgrade-db.ts';
import { migrate } from '../../src/kernel/db/database.ts';
import { migrations } from '../../src/app/migrations.ts';
import { validateConfig } from '../../src/kernel/config.ts';
import { JobsConfigSchema, type JobsConfig } from '../../src/jobs/config-schema.ts';
import { fairShares } from '../../src/jobs/matching/shares.ts';
import { explainMatching, type ExplainDeps } from '../../src/jobs/matching/explain.ts';
import type { ResourceDescription } from '../../src/protocol/requirements.ts';
import type { SiteBan } from '../../src/sites/index.ts';
import { createHash } from 'node:crypto';
import type { Manifest } from '../../src/jobs/manifest.ts';
import { requirementsOf } from '../../src/jobs/requirements.ts';
import { requirementsKey } from '../../src/protocol/requirements.ts';

const T = '2026-11-27T00:00:00.000Z';

const config = (raw: Record<string, unknown>): JobsConfig => validateConfig(JobsConfigSchema, raw, 'test');

const resource = (site: string, kind: ResourceDescription['kind'], cores: number, extra: Partial<ResourceDescription> = {}): ResourceDescription => ({
  site,
  resource: '',
  kind,
  cores,
  memoryMb: 8000,
  gpus: 0,
  tags: [],
  platform: 'Linux_x86_64_glibc-2.36',
  cpuTime: null,
  ...extra,
});

for (const { dialect, skip } of await dialects()) {
  describe(`matching explanation and shares (${dialect})`, { skip }, () => {
    let scratch: ScratchDb;
    before(async () => {
      scratch = await scratchDatabase(dialect);
      await migrate(scratch.db, migrations);
    });
    after(() => scratch?.close());
    beforeEach(async () => {
      await scratch.db.deleteFrom('jobs').execute();
      await scratch.db.deleteFrom('task_queues').execute();
    });

    /**
     * A Waiting job goes into the task queue of its owner, group and requirements (made when new), as
     * submission files it (the triggers count it); `tq` names one instead, or null for none.
     */
    async function queueOf(owner: string, group: string, manifest: Manifest, type: string): Promise<number> {
      const req = { ...requirementsOf(manifest, 'test', [...(manifest.Sites ?? []), 'Local']), jobType: type };
      const hash = createHash('sha256').update(requirementsKey(req)).digest('hex');
      const found = await scratch.db.selectFrom('task_queues').select('tq_id').where('owner', '=', owner).where('owner_group', '=', group).where('req_hash', '=', hash).executeTakeFirst();
      if (found) return Number(found.tq_id);
      const list = (xs: string[]) => (xs.length ? `,${xs.join(',')},` : '');
      const row = await scratch.db
        .insertInto('task_queues')
        .values({ owner, owner_group: group, req_hash: hash, requirements: JSON.stringify(req), job_type: type, min_processors: req.minProcessors, max_processors: req.maxProcessors, max_ram: req.maxRamMb, gpus: req.gpus, cpu_time: req.cpuTime, tags: list(req.tags), platforms: list(req.platforms), sites: req.sites ? list(req.sites) : null, banned_sites: list(req.bannedSites), created_at: T })
        .returning('tq_id')
        .executeTakeFirstOrThrow();
      return Number(row.tq_id);
    }

    async function job(o: { owner?: string; group?: string; status?: string; site?: string; priority?: number; type?: string; manifest?: Record<string, unknown>; tq?: number | null } = {}): Promise<number> {
      const manifest = { Executable: '/bin/true', ...(o.manifest ?? {}) } as Manifest;
      const status = o.status ?? 'Waiting';
      const tq = o.tq !== undefined || status !== 'Waiting' ? (o.tq ?? null) : await queueOf(o.owner ?? 'alice', o.group ?? 'dirigo_user', manifest, o.type ?? 'User');
      const row = await scratch.db
        .insertInto('jobs')
        .values({
          job_name: 'j',
          job_group: '',
          job_type: o.type ?? 'User',
          owner: o.owner ?? 'alice',
          owner_dn: `/CN=${o.owner ?? 'alice'}`,
          owner_group: o.group ?? 'dirigo_user',
          setup: 'Dirigo-Test',
          site: o.site ?? 'ANY',
          sites: null,
          status,
          minor_status: '',
          application_status: 'Unknown',
          user_priority: o.priority ?? 0,
          reschedule_counter: 0,
          submission_time: T,
          last_update_time: T,
          manifest: JSON.stringify(manifest),
          input_sandbox: null,
          input_sandbox_size: null,
          output_sandbox: null,
          output_sandbox_size: null,
          executor_id: null,
          executor_ref: null,
          lease_until: null,
          tq_id: tq,
        })
        .returning('job_id')
        .executeTakeFirstOrThrow();
      return Number(row.job_id);
    }

    it('shares: targets 0.75 and 0.25 for shares 3:1, split equally between a group\'s users with work', async () => {
      for (let i = 0; i < 3; i++) await job({ owner: 'a1', group: 'atlas' });
      await job({ owner: 'a2', group: 'atlas', status: 'Running', site: 'Local' });
      await job({ owner: 'a3', group: 'atlas', status: 'Done', site: 'Local' });
      await job({ owner: 'b1', group: 'belle' });
      await job({ owner: 'b1', group: 'belle', status: 'Matched', site: 'Local' });
      await job({ owner: 'c1', group: 'cms', status: 'Done', site: 'Local' });
      const answer = await fairShares(scratch.db, config({ fairShare: { shares: { atlas: 3 }, halfLifeMs: 3600_000 } }));
      assert.equal(answer.halfLifeSeconds, 3600);
      assert.deepEqual(answer.groups.map((g) => [g.group, g.share, g.target, g.waiting, g.running]), [
        ['atlas', 3, 0.75, 3, 1],
        ['belle', 1, 0.25, 1, 1],
      ]);
      const atlas = answer.groups[0]!;
      assert.deepEqual(atlas.users.map((u) => [u.user, u.target, u.waiting, u.running]), [
        ['a1', 0.375, 3, 0],
        ['a2', 0.375, 0, 1],
      ]);
      for (const g of answer.groups) assert.equal(g.actual, 0, 'no usage yet');
    });

    it('shares: actual from decayed usage over everyone\'s, furthest below target first', async () => {
      await job({ owner: 'a1', group: 'atlas' });
      await job({ owner: 'b1', group: 'belle' });
      const usage = async () => [
        { group: 'atlas', user: '', usage: 10 },
        { group: 'atlas', user: 'a1', usage: 10 },
        { group: 'belle', user: '', usage: 30 },
        { group: 'belle', user: 'b1', usage: 20 },
        { group: 'belle', user: 'b2', usage: 10 },
        { group: 'gone', user: 'g1', usage: 0 },
      ];
      const answer = await fairShares(scratch.db, config({ fairShare: { shares: { atlas: 3 } } }), { usage });
      assert.deepEqual(answer.groups.map((g) => [g.group, g.target, g.actual, g.usage]), [
        ['atlas', 0.75, 0.25, 10],
        ['gone', 0, 0, 0],
        ['belle', 0.25, 0.75, 30],
      ]);
      assert.deepEqual(answer.groups[2]!.users.map((u) => [u.user, u.target, u.actual]), [
        ['b1', 0.25, 0.5],
        ['b2', 0, 0.25],
      ]);
    });

    it('names NumberOfProcessors for a 16-processor job against a 4-core local site', async () => {
      const jid = await job({ manifest: { NumberOfProcessors: 16 }, tq: null });
      const deps: ExplainDeps = { bans: async () => [], resources: async () => [resource('Local', 'local', 4)] };
      const answer = await explainMatching(scratch.db, config({}), jid, deps);
      assert.equal(answer.Status, 'Waiting');
      assert.equal((answer.requirements as { minProcessors?: number }).minProcessors, 16);
      assert.equal(answer.resources.length, 1);
      const [local] = answer.resources;
      assert.equal(local!.eligible, false);
      assert.deepEqual(local!.holdBack.map((h) => [h.kind, h.attribute]), [['requirement', 'NumberOfProcessors']]);
      assert.match(local!.holdBack[0]!.reason, /needs 16 processors; Local offers 4/);
      assert.equal(answer.summary, 'Waiting: no resource offers 16 processors (NumberOfProcessors)');
    });

    it('reads the requirements of its task queue when it has one', async () => {
      const req = { minProcessors: 2, maxProcessors: 2, maxRamMb: 0, gpus: 1, tags: ['GPU'], platforms: [], cpuTime: 0, sites: null, bannedSites: [], jobType: 'User' };
      const tq = await scratch.db
        .insertInto('task_queues')
        .values({ owner: 'alice', owner_group: 'dirigo_user', req_hash: 'h', requirements: JSON.stringify(req), job_type: 'User', min_processors: 2, max_processors: 2, max_ram: 0, gpus: 1, cpu_time: 0, tags: ',GPU,', platforms: '', sites: null, banned_sites: '', created_at: T })
        .returning('tq_id')
        .executeTakeFirstOrThrow();
      const jid = await job({ tq: Number(tq.tq_id) });
      const answer = await explainMatching(scratch.db, config({}), jid, { bans: async () => [], resources: async () => [resource('Local', 'local', 4)] });
      assert.equal(answer.TaskQueueID, Number(tq.tq_id));
      assert.deepEqual(answer.resources[0]!.holdBack.map((h) => h.attribute), ['NumberOfGPUs', 'Tags']);
    });

    it('names the ban of a site or of one resource: who, since when and why', async () => {
      const jid = await job();
      const cfg = config({ sites: [{ name: 'Cluster', type: 'slurm' }, { name: 'Local', type: 'local' }] });
      const bans: SiteBan[] = [
        { site: 'Cluster', resource: '', reason: 'disk full', by: 'admin', since: T },
        { site: 'Local', resource: 'node2', reason: 'bad memory', by: 'ops', since: T },
      ];
      const resources = [resource('Cluster', 'slurm', 8, { resource: 'short' }), resource('Local', 'local', 8, { resource: 'node1' }), resource('Local', 'local', 8, { resource: 'node2' })];
      const answer = await explainMatching(scratch.db, cfg, jid, { bans: async () => bans, resources: async () => resources });
      const by = Object.fromEntries(answer.resources.map((v) => [`${v.site}/${v.resource}`, v]));
      assert.deepEqual(by['Cluster/short']!.holdBack.map((h) => [h.kind, h.attribute]), [['ban', 'Site']]);
      assert.match(by['Cluster/short']!.holdBack[0]!.reason, /Cluster is banned since 2026-11-27T00:00:00.000Z by admin: disk full/);
      assert.deepEqual(by['Local/node2']!.holdBack.map((h) => [h.kind, h.attribute]), [['ban', 'Resource']]);
      assert.equal(by['Local/node1']!.eligible, true);
      assert.match(answer.summary, /^Waiting for a free slot: 1 site could run it; its owner's group is at 0% of its target share$/);
    });

    it('names JobType when the site\'s running limit is reached, and not below it', async () => {
      const cfg = config({ sites: [{ name: 'Cluster', type: 'agents', runningLimits: { JobType: { User: 2 } } }] });
      const deps: ExplainDeps = { bans: async () => [], resources: async () => [resource('Cluster', 'agents', 8, { resource: 'wn1' })] };
      const jid = await job();
      await job({ status: 'Running', site: 'Cluster', owner: 'bob' });
      await job({ status: 'Running', site: 'Cluster', type: 'Test' });
      await job({ status: 'Running', site: 'Elsewhere' });
      assert.equal((await explainMatching(scratch.db, cfg, jid, deps)).resources[0]!.eligible, true, 'one of two');
      await job({ status: 'Completing', site: 'Cluster', owner: 'carol' });
      const answer = await explainMatching(scratch.db, cfg, jid, deps);
      const [v] = answer.resources;
      assert.equal(v!.eligible, false);
      assert.deepEqual(v!.holdBack, [{ kind: 'limit', attribute: 'JobType', reason: 'JobType=User: 2 of 2 running at Cluster (jobs.sites[Cluster].runningLimits)' }]);
      assert.match(answer.summary, /^Waiting: no resource can run it now \(of 1: 1 at a running limit\)$/);
    });

    it('says so of a site with no live resource', async () => {
      const jid = await job();
      const cfg = config({ sites: [{ name: 'Grid', type: 'agents' }, { name: 'Cluster', type: 'slurm' }] });
      const answer = await explainMatching(scratch.db, cfg, jid, { bans: async () => [], resources: async () => [] });
      assert.deepEqual(answer.resources.map((v) => [v.site, v.kind, v.eligible, v.holdBack.map((h) => h.kind).join()]), [
        ['Grid', 'agents', false, 'status'],
        ['Cluster', 'slurm', false, 'status'],
      ]);
      assert.match(answer.resources[0]!.holdBack[0]!.reason, /no agent of Grid has asked for work lately/);
      assert.equal(answer.summary, 'Waiting: no resource can run it now (of 2: 2 without a live resource)');
      // Its Sites are checked even where no resource is known.
      const only = await job({ manifest: { Sites: ['Cluster'] } });
      const elsewhere = await explainMatching(scratch.db, cfg, only, { bans: async () => [], resources: async () => [] });
      assert.deepEqual(elsewhere.resources[0]!.holdBack.map((h) => h.attribute), ['Sites', 'Site']);
      assert.deepEqual(elsewhere.resources[1]!.holdBack.map((h) => h.attribute), ['Site']);
    });

    it('counts the owner\'s jobs that go first, and states its share', async () => {
      await job({ priority: 5 });
      await job({ priority: 0 });
      const jid = await job({ priority: 0 });
      await job({ priority: 0 });
      await job({ priority: 9, owner: 'bob' });
      const answer = await explainMatching(scratch.db, config({}), jid, { bans: async () => [], resources: async () => [resource('Local', 'local', 4)] });
      assert.deepEqual(answer.share, { group: 'dirigo_user', user: 'alice', groupTarget: 1, groupActual: 0, userTarget: 0.5, userActual: 0, ahead: 2 });
      assert.match(answer.summary, /could run it; .*, and 2 of its owner's jobs go first$/);
    });

    it('says the status of a job that no longer waits; a missing or hidden job is not found', async () => {
      const jid = await job({ status: 'Running', site: 'Local' });
      const answer = await explainMatching(scratch.db, config({}), jid, { bans: async () => [], resources: async () => [] });
      assert.deepEqual([answer.summary, answer.resources, answer.share, answer.TaskQueueID], ['Not waiting: Running at Local', [], null, null]);
      await assert.rejects(explainMatching(scratch.db, config({}), jid + 1000), { code: 'not_found' });
      await assert.rejects(explainMatching(scratch.db, config({}), jid, { visible: (j) => j.owner === 'bob' }), { code: 'not_found' });
    });
  });
}
