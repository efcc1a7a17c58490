/**
 * Demand (src/jobs/matching/demand.ts) as the pilot factory asks it: the Waiting jobs a pilot of a
 * partition could run, by every requirement, the jobs' Sites and BannedSites, and the bans.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../../helpers/dialects.ts';
import type { TestService } from '../../helpers/service.ts';
import { startJobsService } from '../../jobs/helpers.ts';
import { waitingFor, JobEvents } from '../../../src/jobs/index.ts';
import { ban, unban } from '../../../src/sites/site-status.ts';
import { SiteFactory, type FactorySite } from '../../../src/agents/factory/factory.ts';
import { SlurmBatch } from '../../../src/agents/factory/slurm-batch.ts';

const quiet = { warn() {}, info() {} };

for (const { dialect, skip } of await dialects()) {
  describe(`pilot demand (${dialect})`, { skip }, () => {
    let svc: TestService;
    let factory: SiteFactory;
    before(async () => {
      svc = await startJobsService(dialect, {
        // Nothing runs: every job stays Waiting.
        scheduler: { enabled: false },
        sites: [
          { name: 'Local', type: 'local', slots: 1 },
          { name: 'Pool', type: 'agents', factory: { type: 'slurm', owner: 'pilot', partition: 'debug,short', cores: 2, memoryMb: 4000, timeLimitSeconds: 3600, intervalMs: 3600000 } },
        ],
      });
      const site = svc.ctx.config.jobs.sites.find((s) => s.name === 'Pool') as FactorySite;
      factory = new SiteFactory(svc.ctx, new JobEvents(), site, new SlurmBatch(site.factory), quiet);
      const alice = await svc.token('alice');
      const job = (extra: object) => ({ Executable: '/bin/true', ...extra });
      const res = await svc.request('/jobs', {
        method: 'POST',
        token: alice,
        json: [
          job({}),
          job({}),
          job({ Sites: ['Pool', 'Local'] }),
          job({ NumberOfProcessors: 2 }),
          job({ Sites: ['Local'] }),
          job({ NumberOfProcessors: 4 }),
          job({ MaxRAM: 8000 }),
          job({ CPUTime: 3590 }),
          job({ Tags: ['GPU'] }),
          job({ NumberOfGPUs: 1 }),
          job({ BannedSites: ['Pool'] }),
        ],
      });
      assert.equal(res.status, 201, res.text);
    });
    after(async () => svc?.close());

    test("counts the Waiting jobs whose requirements a pilot meets, in its site's Sites", async () => {
      const offer = await factory.offer('debug');
      assert.deepEqual({ cores: offer.cores, memoryMb: offer.memoryMb, gpus: offer.gpus, cpuTime: offer.cpuTime, resource: offer.resource }, { cores: 2, memoryMb: 4000, gpus: 0, cpuTime: 3480, resource: 'debug' });
      assert.equal(await waitingFor(svc.ctx.db, offer), 4);
      // A pilot of more time takes the long job too.
      assert.equal(await waitingFor(svc.ctx.db, { ...offer, cpuTime: 3600 }), 5);
    });

    test("a site's running limits leave room for as many as they allow", async () => {
      const offer = await factory.offer('debug');
      // Nothing held at Pool yet: a limit of 3 User jobs counts 3 of the 4, one of 0 none.
      assert.equal(await waitingFor(svc.ctx.db, offer, { JobType: { User: 3 } }), 3);
      assert.equal(await waitingFor(svc.ctx.db, offer, { Owner: { alice: 0 } }), 0);
      assert.equal(await waitingFor(svc.ctx.db, offer, { Owner: { bob: 0 } }), 4);
    });

    test('nothing for a banned partition, or a banned site', async () => {
      await ban(svc.ctx.db, { site: 'Pool', resource: 'debug', reason: 'test', by: 'admin' });
      assert.equal(await waitingFor(svc.ctx.db, await factory.offer('debug')), 0);
      assert.equal(await waitingFor(svc.ctx.db, await factory.offer('short')), 4);
      await ban(svc.ctx.db, { site: 'Pool', reason: 'test', by: 'admin' });
      assert.equal(await waitingFor(svc.ctx.db, await factory.offer('short')), 0);
      await unban(svc.ctx.db, { site: 'Pool', reason: 'test', by: 'admin' });
      await unban(svc.ctx.db, { site: 'Pool', resource: 'debug', reason: 'test', by: 'admin' });
      assert.equal(await waitingFor(svc.ctx.db, await factory.offer('debug')), 4);
    });
  });
}
