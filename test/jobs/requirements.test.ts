/** Requirements: reading them from a manifest, and checking a resource against them (no service). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { requirementsOf } from '../../src/jobs/requirements.ts';
import { parseJdl } from '../../src/protocol/jdl.ts';
import { platformCompatible, processorsFor, requirementsKey, unmetRequirements, type ResourceDescription } from '../../src/protocol/requirements.ts';
import { InvalidRequest } from '../../src/kernel/errors.ts';

const SITES = ['Local', 'Cluster', 'Grid'];
const read = (m: Record<string, unknown>) => requirementsOf({ Executable: '/bin/true', ...m }, 'manifest', SITES);
const node: ResourceDescription = { site: 'Grid', resource: 'wn01', kind: 'agents', cores: 8, memoryMb: 16000, gpus: 1, tags: ['cvmfs', 'GPU'], platform: 'Linux_x86_64_glibc-2.36', cpuTime: 86400 };

describe('requirements from a manifest', () => {
  it('takes the neutral values when nothing is asked', () => {
    assert.deepEqual(read({}), { minProcessors: 1, maxProcessors: 1, maxRamMb: 0, gpus: 0, tags: [], platforms: [], cpuTime: 0, sites: null, bannedSites: [], jobType: 'User' });
  });

  it('reads DIRAC names from JSON and JDL alike, lists sorted and unique', () => {
    const jdl = parseJdl('[ Executable = "run"; NumberOfProcessors = 4; MaxRAM = 2048; NumberOfGPUs = 1; Tags = {"b", "a", "b"}; Platform = "Linux_x86_64_glibc-2.17"; BannedSite = "Cluster"; CPUTime = 600; JobType = "MCSimulation" ]');
    const fromJdl = requirementsOf(jdl as never, 'jdl', SITES);
    assert.deepEqual(fromJdl, { minProcessors: 4, maxProcessors: 4, maxRamMb: 2048, gpus: 1, tags: ['a', 'b'], platforms: ['Linux_x86_64_glibc-2.17'], cpuTime: 600, sites: null, bannedSites: ['Cluster'], jobType: 'MCSimulation' });
    const fromJson = read({ NumberOfProcessors: 4, MaxRAM: 2048, NumberOfGPUs: 1, Tags: ['a', 'b', 'a'], Platform: 'Linux_x86_64_glibc-2.17', BannedSites: ['Cluster'], CPUTime: 600, JobType: 'MCSimulation' });
    assert.equal(requirementsKey(fromJson), requirementsKey(fromJdl));
  });

  it('takes a processor range; the maximum is the minimum when absent', () => {
    assert.deepEqual([read({ MinNumberOfProcessors: 2, MaxNumberOfProcessors: 8 }).minProcessors, read({ MinNumberOfProcessors: 2, MaxNumberOfProcessors: 8 }).maxProcessors], [2, 8]);
    assert.equal(read({ MinNumberOfProcessors: 3 }).maxProcessors, 3);
  });

  const refused: [string, Record<string, unknown>, RegExp][] = [
    ['an impossible range', { MinNumberOfProcessors: 8, MaxNumberOfProcessors: 2 }, /MaxNumberOfProcessors \(2\) is below MinNumberOfProcessors \(8\)/],
    ['both forms', { NumberOfProcessors: 2, MaxNumberOfProcessors: 4 }, /not both/],
    ['zero processors', { NumberOfProcessors: 0 }, /NumberOfProcessors must be an integer from 1/],
    ['a fractional MaxRAM', { MaxRAM: 1.5 }, /MaxRAM must be an integer/],
    ['a platform with a space', { Platform: 'Linux x86' }, /Platform "Linux x86" is not a platform name/],
    ['a tag that is not a word', { Tags: ['ok', 'no way'] }, /Tags "no way" is not a tag/],
    ['an unknown banned site', { BannedSites: ['Mars'] }, /BannedSites names the unknown site 'Mars'/],
    ['banning every allowed site', { Sites: ['Local'], BannedSites: ['Local'] }, /BannedSites bans every site the job may run at \(Local\)/],
    ['a Requirements expression', { Requirements: 'other.Memory > 2000' }, /Requirements expressions are not evaluated/],
  ];
  for (const [what, manifest, message] of refused) {
    it(`refuses ${what}, naming the key`, () => {
      assert.throws(() => read(manifest), (err: unknown) => err instanceof InvalidRequest && message.test(err.message));
    });
  }
});

describe('a resource against requirements', () => {
  it('names every requirement it does not meet', () => {
    const req = read({ NumberOfProcessors: 16, MaxRAM: 32000, NumberOfGPUs: 2, Tags: ['GPU', 'infiniband'], Platform: 'Linux_aarch64_glibc-2.17', CPUTime: 100000, BannedSites: ['Grid'] });
    assert.deepEqual(unmetRequirements(req, node).map((u) => u.attribute), ['BannedSites', 'NumberOfProcessors', 'MaxRAM', 'NumberOfGPUs', 'Tags', 'Platform', 'CPUTime']);
    assert.match(unmetRequirements(req, node).find((u) => u.attribute === 'Tags')!.reason, /Grid\/wn01 lacks the tag infiniband/);
    assert.deepEqual(unmetRequirements(read({ NumberOfProcessors: 8, Tags: ['GPU'], Platform: ['Linux_x86_64_glibc-2.17'] }), node), []);
  });

  it('runs an older glibc build on a newer glibc of the same OS and architecture, not the reverse', () => {
    assert.ok(platformCompatible('Linux_x86_64_glibc-2.17', 'Linux_x86_64_glibc-2.36'));
    assert.ok(platformCompatible('Linux_x86_64_glibc-2.36', 'Linux_x86_64_glibc-2.36'));
    assert.ok(!platformCompatible('Linux_x86_64_glibc-2.38', 'Linux_x86_64_glibc-2.36'));
    assert.ok(!platformCompatible('Linux_aarch64_glibc-2.17', 'Linux_x86_64_glibc-2.36'));
    assert.ok(!platformCompatible('el9', 'el8'));
  });

  it('gives a job as many processors as it can use, never fewer than its minimum', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: 128 }), (min, extra, free) => {
        const given = processorsFor({ minProcessors: min, maxProcessors: min + extra }, free);
        if (free < min) return given === undefined;
        return given !== undefined && given >= min && given <= min + extra && given <= free && (given === min + extra || given === free);
      }),
    );
  });
});
