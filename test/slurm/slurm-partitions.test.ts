/**
 * A Slurm site's partitions as matching resources (docs/matching.md), without daemons: `sinfo` output
 * parsing (time limits, GRES, several node kinds), the offers a site makes of its configured partitions,
 * and the sbatch options and environment of a job matched to one. Where a real `sinfo` answers (the
 * development cluster of scripts/slurm-dev.sh), its own output is parsed too.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { gresGpus, parseSinfo, parseSlurmTime, partitionOffers, sitePartitions, SINFO_ARGS } from '../../src/executors/slurm-partitions.ts';
import { SlurmExecutor } from '../../src/executors/slurm.ts';
import { FileSandboxStore } from '../../src/jobs/sandbox-store.ts';
import { REQUIREMENT_LIMITS } from '../../src/protocol/requirements.ts';
import type { SlurmSiteConfig } from '../../src/jobs/slurm-site-schema.ts';

const quiet = { warn() {}, info() {} };

describe('sinfo output', () => {
  test('time limits in every form Slurm prints', () => {
    assert.equal(parseSlurmTime('infinite'), null);
    assert.equal(parseSlurmTime('UNLIMITED'), null);
    assert.equal(parseSlurmTime('1-00:00:00'), 86400);
    assert.equal(parseSlurmTime('2-12'), 2 * 86400 + 12 * 3600);
    assert.equal(parseSlurmTime('1-02:03'), 86400 + 2 * 3600 + 3 * 60);
    assert.equal(parseSlurmTime('10:00'), 600);
    assert.equal(parseSlurmTime('1:30:00'), 5400);
    assert.equal(parseSlurmTime('30'), 1800);
    assert.equal(parseSlurmTime('n/a'), undefined);
  });

  test('GPUs of a GRES list', () => {
    assert.equal(gresGpus('(null)'), 0);
    assert.equal(gresGpus('gpu:2'), 2);
    assert.equal(gresGpus('gpu:tesla:4(S:0-1)'), 4);
    assert.equal(gresGpus('gpu:a100:2(S:0,1),mps:400'), 2);
    assert.equal(gresGpus('mps:100'), 0);
  });

  test('partitions: default marked, MaxCPUsPerNode caps CPUs, several node kinds keep the largest', () => {
    const out = [
      'debug*|up|2|24105|(null)|infinite|UNLIMITED|',
      'short|up|2|24105|(null)|10:00|1|',
      'gpu|up|64|256000|gpu:a100:4(S:0-1)|1-00:00:00|UNLIMITED|',
      'gpu|up|32|128000+|gpu:2|1-00:00:00|UNLIMITED|',
      'old|down|8|1000|(null)|30:00|UNLIMITED|',
      'garbage',
      '',
    ].join('\n');
    assert.deepEqual(parseSinfo(out), [
      { name: 'debug', isDefault: true, up: true, cpus: 2, memoryMb: 24105, gpus: 0, timeLimit: null },
      { name: 'short', isDefault: false, up: true, cpus: 1, memoryMb: 24105, gpus: 0, timeLimit: 600 },
      { name: 'gpu', isDefault: false, up: true, cpus: 64, memoryMb: 256000, gpus: 4, timeLimit: 86400 },
      { name: 'old', isDefault: false, up: false, cpus: 8, memoryMb: 1000, gpus: 0, timeLimit: 1800 },
    ]);
  });

  test("the development cluster's own sinfo (when Slurm is here): debug and short, as scripts/slurm-dev.sh configures them", (t) => {
    let out: string;
    try {
      out = execFileSync('sinfo', SINFO_ARGS, { encoding: 'utf8', timeout: 10000, stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      t.skip('no Slurm here');
      return;
    }
    const parts = parseSinfo(out);
    const debug = parts.find((p) => p.name === 'debug');
    const short = parts.find((p) => p.name === 'short');
    if (!debug || !short) {
      t.skip(`not the development cluster (partitions ${parts.map((p) => p.name).join(', ')})`);
      return;
    }
    assert.equal(debug.isDefault, true);
    assert.equal(debug.timeLimit, null);
    assert.ok(debug.cpus >= 1 && debug.memoryMb > 0);
    assert.deepEqual({ cpus: short.cpus, timeLimit: short.timeLimit, isDefault: short.isDefault }, { cpus: 1, timeLimit: 600, isDefault: false });
  });
});

describe('a Slurm site as resources', () => {
  const known = parseSinfo(['debug*|up|2|24105|(null)|infinite|UNLIMITED|', 'short|up|2|24105|gpu:2|10:00|1|', 'off|inactive|4|1000|(null)|infinite|UNLIMITED|'].join('\n'));
  const traits = { site: 'Cluster', tags: ['cvmfs'], platform: 'Linux_x86_64_glibc-2.36' };

  test('its configured partitions, in its order, each a non-consumable offer with what sinfo said', () => {
    const described = sitePartitions('short, debug', known, traits);
    assert.deepEqual(described, [
      { site: 'Cluster', resource: 'short', kind: 'slurm', cores: 1, memoryMb: 24105, gpus: 2, tags: ['cvmfs'], platform: 'Linux_x86_64_glibc-2.36', cpuTime: 600 },
      { site: 'Cluster', resource: 'debug', kind: 'slurm', cores: 2, memoryMb: 24105, gpus: 0, tags: ['cvmfs'], platform: 'Linux_x86_64_glibc-2.36', cpuTime: null },
    ]);
    assert.deepEqual(partitionOffers(described, known).map((o) => [o.resource, o.consumable]), [['short', false], ['debug', false]]);
  });

  test("without a partition: Slurm's default one", () => {
    assert.deepEqual(sitePartitions(undefined, known, traits).map((d) => d.resource), ['debug']);
    // Before sinfo answered: no name (sbatch picks the default), no limits.
    const unread = sitePartitions(undefined, undefined, traits);
    assert.deepEqual(unread.map((d) => [d.resource, d.cores, d.cpuTime]), [['', REQUIREMENT_LIMITS.processors, null]]);
    assert.equal(partitionOffers(unread, undefined).length, 1);
  });

  test('a partition sinfo does not list is offered without limits (sbatch says what is wrong); one that is not up is not offered', () => {
    const described = sitePartitions('no_such_partition,off', known, traits);
    assert.equal(described[0]!.cores, REQUIREMENT_LIMITS.processors);
    assert.equal(described[0]!.memoryMb, REQUIREMENT_LIMITS.maxRamMb);
    assert.deepEqual(partitionOffers(described, known).map((o) => o.resource), ['no_such_partition']);
  });

  test('a matched job goes to its partition with --cpus-per-task, --mem, --gres, --time, and is told its processors', async () => {
    const submitted: { script: string; options: readonly string[] }[] = [];
    const client = {
      submit: async (script: string, options: readonly string[]) => {
        submitted.push({ script: readFileSync(script, 'utf8'), options });
        return String(100 + submitted.length);
      },
      query: async () => new Map(),
      cancel: async () => {},
      findByWorkDir: async () => undefined,
      partitions: async () => known,
    };
    const dir = mkdtempSync(join(tmpdir(), 'dirigo-partitions-'));
    const site: SlurmSiteConfig = {
      name: 'Cluster', type: 'slurm', partition: 'short,debug', sbatchOptions: [], stagingDir: 'stage', maxJobs: 10, commandTimeoutMs: 1000,
      retryDelayMs: 100, keepStaging: false, runningLimits: {}, partitionRefreshMs: 60000, tags: ['cvmfs'], stageInputFrom: 'staging',
    };
    const slurm = new SlurmExecutor({ site, stagingDir: join(dir, 'stage'), store: new FileSandboxStore(join(dir, 'sb')), limits: { maxFileSize: 1e6, maxSandboxSize: 1e6, maxFiles: 10, maxOutputFiles: 10 } as never, log: quiet, client });
    slurm.start(async () => true);
    const offers = await slurm.offers();
    assert.deepEqual(offers.map((o) => [o.resource, o.cores, o.cpuTime, o.consumable]), [['short', 1, 600, false], ['debug', 2, null, false]]);
    assert.deepEqual(slurm.resources().map((r) => r.resource), ['short', 'debug']);
    const base = { argv: [], inputSandbox: null, owner: 'alice', ownerGroup: 'g', rescheduleCounter: 0 };
    await slurm.submit({ ...base, jobId: 1, manifest: { Executable: '/bin/true', MaxRAM: 2000, NumberOfGPUs: 1, CPUTime: 90, NumberOfProcessors: 2 }, processors: 2, resource: 'debug' });
    await slurm.submit({ ...base, jobId: 2, manifest: { Executable: '/bin/true' }, resource: 'short' });
    const [first, second] = submitted;
    for (const o of ['--partition=debug', '--cpus-per-task=2', '--mem=2000M', '--gres=gpu:1', '--time=2']) assert.ok(first!.options.includes(o), `${o} in ${first!.options.join(' ')}`);
    assert.match(first!.script, /DIRIGO_NUMBER_OF_PROCESSORS='?2'?/);
    assert.ok(second!.options.includes('--partition=short') && second!.options.includes('--cpus-per-task=1'), second!.options.join(' '));
    assert.ok(!second!.options.some((o) => /^--(mem|gres|time)=/.test(o)), 'nothing asked, nothing passed');
    assert.match(second!.script, /DIRIGO_NUMBER_OF_PROCESSORS='?1'?/);
    await slurm.close();
  });
});
