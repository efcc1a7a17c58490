/**
 * Slurm's figures for usage records (src/executors/slurm-usage.ts): its duration format
 * [DD-[HH:]]MM:SS[.mmm], memory with units, sacct's parsable rows of a job and its steps, and the batch
 * script's `times` where accounting is off. No Slurm needed.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseSacctUsage, parseSlurmDuration, parseSlurmMemoryKb, parseTimesOutput } from '../../src/executors/slurm-usage.ts';

describe('Slurm usage figures', () => {
  test('durations: MM:SS.mmm, MM:SS, HH:MM:SS, D-HH:MM:SS; anything else is unknown', () => {
    assert.equal(parseSlurmDuration('00:01.520'), 1.52);
    assert.equal(parseSlurmDuration('02:03'), 123);
    assert.equal(parseSlurmDuration('01:02:03'), 3723);
    assert.equal(parseSlurmDuration('1-02:03:04'), 93784);
    assert.equal(parseSlurmDuration('10-00:00:00'), 864000);
    assert.equal(parseSlurmDuration(' 00:00:00 '), 0);
    for (const bad of ['', 'INVALID', 'UNLIMITED', '12', '1-2', 'a:b', '01:02:03:04']) assert.equal(parseSlurmDuration(bad), undefined, bad);
  });

  test('memory: K, M, G, T and plain bytes, in kB', () => {
    assert.equal(parseSlurmMemoryKb('1234K'), 1234);
    assert.equal(parseSlurmMemoryKb('1.5M'), 1536);
    assert.equal(parseSlurmMemoryKb('2G'), 2 * 1024 * 1024);
    assert.equal(parseSlurmMemoryKb('1T'), 1024 ** 3);
    assert.equal(parseSlurmMemoryKb('2048'), 2);
    assert.equal(parseSlurmMemoryKb(''), undefined);
    assert.equal(parseSlurmMemoryKb('lots'), undefined);
  });

  test("sacct rows: the allocation's CPU, Elapsed and partition, the largest MaxRSS of its steps", () => {
    const out = [
      '101|00:01.500|00:00.250||00:00:03|debug',
      '101.batch|00:01.500|00:00.250|65536K|00:00:03|',
      '101.extern|00:00:00|00:00.001|1024K|00:00:03|',
      '101.0|00:00:00|00:00:00|1.5G|00:00:01|',
      '102|1-00:00:00|01:00:00||1-01:00:00|short',
      '103|INVALID|00:00:00||00:00:01|debug',
      '999|00:00:01|00:00:00||00:00:01|debug',
      '',
    ].join('\n');
    const usage = parseSacctUsage(out, new Set(['101', '102', '103']));
    assert.deepEqual(usage.get('101'), { usage: { cpuUserSeconds: 1.5, cpuSystemSeconds: 0.25, maxRssKb: 1.5 * 1024 * 1024, wallSeconds: 3 }, partition: 'debug' });
    assert.deepEqual(usage.get('102'), { usage: { cpuUserSeconds: 86400, cpuSystemSeconds: 3600, wallSeconds: 90000 }, partition: 'short' });
    assert.equal(usage.has('103'), false, 'unreadable CPU: no figures');
    assert.equal(usage.has('999'), false, 'not asked about');
  });

  test("bash's times: the children's line", () => {
    assert.deepEqual(parseTimesOutput('0m0.004s 0m0.002s\n0m1.520s 1m0.010s\n'), { cpuUserSeconds: 1.52, cpuSystemSeconds: 60.01 });
    assert.equal(parseTimesOutput('0m0.004s 0m0.002s\n'), undefined);
    assert.equal(parseTimesOutput('garbage'), undefined);
  });
});
