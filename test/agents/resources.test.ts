/**
 * Agents describe their nodes (docs/matching.md): `dirigo agent --cores --memory --gpus --tag --platform
 * --resource --cpu-time` sends what its node has free in every POST /agents/match; the service turns it
 * into a consumable offer for the matcher; an agent runs a multi-core job with DIRIGO_NUMBER_OF_PROCESSORS
 * and asks for nothing while it has no core free; agents that say nothing (older ones) still match.
 * Real agent processes, both databases. The offers the service builds are read by wrapping Matcher.claim.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from '../jobs/helpers.ts';
import { startAgent, type AgentProcess } from './agent-process.ts';
import { Matcher } from '../../src/jobs/matching/matcher.ts';
import type { ResourceOffer } from '../../src/protocol/requirements.ts';
import { measuredPlatform } from '../../src/payload/machine.ts';

const FINAL = ['Done', 'Failed', 'Killed'];

/** Every offer the matcher was asked with, in order. */
const offers: { offer: ResourceOffer; maxJobs: number }[] = [];
const claim = Matcher.prototype.claim;
Matcher.prototype.claim = function (this: Matcher, offer, maxJobs, claimant) {
  offers.push({ offer: structuredClone(offer), maxJobs });
  return claim.call(this, offer, maxJobs, claimant);
};

async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, log: () => string = () => '', timeoutMs = 60000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}\n${log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A payload that records its processors and working directory (which names its agent), and waits until `until` holds (30 s at most). */
function payload(dir: string, until = 'true'): { Executable: string; Arguments: string } {
  const script = `echo "$DIRIGO_NUMBER_OF_PROCESSORS" > ${dir}/procs.$DIRIGO_JOB_ID; pwd > ${dir}/where.$DIRIGO_JOB_ID; i=0; until ${until}; do i=$((i+1)); [ $i -lt 300 ] || exit 7; sleep 0.1; done`;
  return { Executable: '/bin/sh', Arguments: `-c '${script}'` };
}

for (const { dialect, skip } of await dialects()) {
  describe(`agents describe their nodes (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let pilot: string;
    const agents: AgentProcess[] = [];

    before(async () => {
      svc = await startJobsService(dialect, { sites: [{ name: 'Local', type: 'local', slots: 1 }, { name: 'Pool', type: 'agents', heartbeatIntervalMs: 500 }] });
      alice = await svc.token('alice');
      pilot = await svc.token('pilot', 'dirigo_pilot');
    });
    afterEach(async () => {
      await Promise.all(agents.splice(0).map((a) => a.stop('SIGKILL')));
    });
    after(async () => svc?.close());

    test('an agent offers what its options say, and measured defaults for the rest', async () => {
      offers.length = 0;
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool', slots: 3, extra: ['--cores', '2', '--memory', '1500', '--gpus', '1', '--tag', 'fast', '--tag', 'cvmfs:lhcb', '--platform', 'Linux_x86_64_glibc-2.99', '--resource', 'nodeA', '--cpu-time', '3600'] }));
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool', slots: 2, extra: ['--resource', 'nodeB'] }));
      const a = await until('an offer of nodeA', () => offers.find((o) => o.offer.resource === 'nodeA'), () => agents[0]!.log());
      assert.equal(a.maxJobs, 3);
      const { cpuTime, ...rest } = a.offer;
      assert.deepEqual(rest, { site: 'Pool', resource: 'nodeA', kind: 'agents', cores: 2, memoryMb: 1500, gpus: 1, tags: ['cvmfs:lhcb', 'fast'], platform: 'Linux_x86_64_glibc-2.99', consumable: true });
      assert.ok(cpuTime !== null && cpuTime <= 3600 && cpuTime > 3500, `time left ${cpuTime}`);
      const b = await until('an offer of nodeB', () => offers.find((o) => o.offer.resource === 'nodeB'), () => agents[1]!.log());
      assert.equal(b.offer.platform, measuredPlatform());
      assert.ok(b.offer.cores >= 1 && b.offer.memoryMb > 100, JSON.stringify(b.offer));
      assert.deepEqual([b.offer.gpus, b.offer.tags, b.offer.cpuTime], [0, [], null]);
    });

    test('a multi-core job takes its cores: told 2 processors, the agent asks for nothing until it ends', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'dirigo-agent-cores-'));
      const release = join(dir, 'release');
      const big = await submit(svc, alice, { ...payload(dir, `[ -e ${release} ]`), NumberOfProcessors: 2, Sites: ['Pool'] });
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool', slots: 4, extra: ['--cores', '2', '--resource', 'twoCores'] }));
      await waitForStatus(svc, alice, big, ['Running'], 60000);
      // Running is reported as the payload starts: its first line may not have run yet.
      const procs = join(dir, `procs.${big}`);
      await until('the payload wrote its processors', () => existsSync(procs) && readFileSync(procs, 'utf8').trim() !== '');
      assert.equal(readFileSync(procs, 'utf8').trim(), '2');
      const asked = offers.filter((o) => o.offer.resource === 'twoCores').length;
      const small = await submit(svc, alice, { ...payload(dir), Sites: ['Pool'] });
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(offers.filter((o) => o.offer.resource === 'twoCores').length, asked, 'no core free: no match request');
      assert.equal((await svc.request(`/jobs/${small}`, { token: alice })).json.Status, 'Waiting');
      writeFileSync(release, '');
      for (const jid of [big, small]) assert.equal((await waitForStatus(svc, alice, jid, FINAL, 60000)).Status, 'Done');
      // Asked again once the cores were free, with all of them.
      assert.ok(offers.filter((o) => o.offer.resource === 'twoCores').slice(asked).some((o) => o.offer.cores === 2));
      assert.equal(readFileSync(join(dir, `procs.${small}`), 'utf8').trim(), '1');
    });

    test('an older agent (slots only) still matches: its cores are its slots, an unknown platform; the answer names Processors', async () => {
      offers.length = 0;
      const jid = await submit(svc, alice, { Executable: '/bin/true', Sites: ['Pool'] });
      const res = await svc.request('/agents/match', { method: 'POST', token: pilot, json: { agentId: 'old-agent', site: 'Pool', slots: 3 } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json.jobs.map((j: { JobID: number; Processors: number }) => [j.JobID, j.Processors]), [[jid, 1]]);
      const o = offers.find((x) => x.offer.resource === 'old-agent');
      assert.ok(o, JSON.stringify(offers));
      assert.deepEqual([o.offer.cores, o.offer.gpus, o.offer.tags, o.offer.platform, o.offer.cpuTime, o.offer.consumable], [3, 0, [], null, null, true]);
      assert.ok(o.offer.memoryMb >= 1 << 20);
      const bad = await svc.request('/agents/match', { method: 'POST', token: pilot, json: { agentId: 'old-agent', site: 'Pool', slots: 1, tags: ['no spaces'] } });
      assert.equal(bad.status, 400, bad.text);
    });

    test('agents with different nodes get only the jobs they satisfy', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'dirigo-agent-fit-'));
      const workA = mkdtempSync(join(tmpdir(), 'dirigo-agent-A-'));
      const workB = mkdtempSync(join(tmpdir(), 'dirigo-agent-B-'));
      const jobs = {
        fourCores: await submit(svc, alice, { ...payload(dir), NumberOfProcessors: 4, Sites: ['Pool'] }),
        bigMemory: await submit(svc, alice, { ...payload(dir), MaxRAM: 4000, Sites: ['Pool'] }),
        tagged: await submit(svc, alice, { ...payload(dir), Tags: ['fast'], Sites: ['Pool'] }),
        gpu: await submit(svc, alice, { ...payload(dir), NumberOfGPUs: 1, Sites: ['Pool'] }),
        newGlibc: await submit(svc, alice, { ...payload(dir), Platform: 'Linux_x86_64_glibc-2.90', Sites: ['Pool'] }),
        longJob: await submit(svc, alice, { ...payload(dir), CPUTime: 7200, Sites: ['Pool'] }),
        nobody: await submit(svc, alice, { ...payload(dir), NumberOfProcessors: 8, Sites: ['Pool'] }),
      };
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool', slots: 4, workDir: workA, extra: ['--cores', '1', '--memory', '1000', '--gpus', '1', '--tag', 'fast', '--platform', 'Linux_x86_64_glibc-2.99', '--resource', 'nodeA', '--cpu-time', '3600'] }));
      agents.push(startAgent(svc.url, svc.pki, { site: 'Pool', slots: 4, workDir: workB, extra: ['--cores', '4', '--memory', '8000', '--platform', 'Linux_x86_64_glibc-2.17', '--resource', 'nodeB'] }));
      const expected: Record<string, string> = { fourCores: workB, bigMemory: workB, tagged: workA, gpu: workA, newGlibc: workA, longJob: workB };
      for (const [name, work] of Object.entries(expected)) {
        const jid = jobs[name as keyof typeof jobs];
        assert.equal((await waitForStatus(svc, alice, jid, FINAL, 60000)).Status, 'Done', name);
        assert.ok(readFileSync(join(dir, `where.${jid}`), 'utf8').startsWith(work), `${name} ran on the wrong agent`);
      }
      assert.equal((await svc.request(`/jobs/${jobs.nobody}`, { token: alice })).json.Status, 'Waiting');
      assert.equal(existsSync(join(dir, `where.${jobs.nobody}`)), false);
    });
  });
}
