/**
 * The Slurm site's parts that need no Slurm daemons: squeue output parsing (unknown jobs, junk), the state
 * → status mapping, and the generated batch script, run by a real bash in a staging directory.
 * The end-to-end suite against real daemons is test/slurm/slurm-site.slurm.ts (`npm run test:slurm`).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { parseSqueue } from '../../src/executors/slurm-client.ts';
import { batchScript, parseExitRecord } from '../../src/executors/slurm-script.ts';
import { shellQuote } from '../../src/payload/shell-quote.ts';
import { cliScript, ownCommand } from '../../src/payload/cli-on-path.ts';
import { describeOutcome, timeLimitMinutes } from '../../src/executors/slurm.ts';

describe('squeue output', () => {
  test('keeps only the jobs asked about, ignores unknown ids and junk lines', () => {
    const out = ['101|PENDING|Priority', '102|RUNNING|None', '999|COMPLETED|None', 'garbage', '', 'abc|RUNNING|x', '103|CANCELLED by 0|None', '104_2|TIMEOUT|TimeLimit'].join('\n');
    const parsed = parseSqueue(out, new Set(['101', '102', '103', '104_2', '105']));
    assert.deepEqual([...parsed.keys()].sort(), ['101', '102', '103', '104_2']);
    assert.deepEqual(parsed.get('101'), { id: '101', state: 'PENDING', reason: 'Priority' });
    assert.equal(parsed.get('103')?.state, 'CANCELLED');
    assert.equal(parsed.has('999'), false, 'a job Dirigo does not hold is ignored');
    assert.equal(parsed.has('105'), false, 'a held job Slurm does not list is absent, not invented');
  });
});

describe('Slurm states → job outcomes', () => {
  const h = (cpu?: number) => ({ slurmId: '7', job: { manifest: { Executable: 'prog', ...(cpu ? { CPUTime: cpu } : {}) } } });
  test('each end state maps as the issue says, with the reason in MinorStatus', () => {
    assert.deepEqual(describeOutcome(h(), 'COMPLETED', 'None', { kind: 'exit', code: 0 }), { outcome: 'done', exitCode: 0, minorStatus: 'Execution Complete', applicationStatus: 'Exited with code 0' });
    const failed = describeOutcome(h(), 'FAILED', 'NonZeroExitCode', { kind: 'exit', code: 3 });
    assert.equal(failed.outcome, 'failed');
    assert.equal(failed.exitCode, 3);
    assert.match(failed.minorStatus, /exited with code 3/);
    const timeout = describeOutcome(h(90), 'TIMEOUT', 'TimeLimit', undefined);
    assert.equal(timeout.outcome, 'failed');
    assert.equal(timeout.cpuLimit, true, 'Failed as is: never judged by the retry keys');
    assert.match(timeout.minorStatus, /CPU time limit exceeded.*--time=2 min for CPUTime 90 s.*TIMEOUT, reason TimeLimit/);
    assert.match(describeOutcome(h(), 'OUT_OF_MEMORY', 'OutOfMemory', undefined).minorStatus, /Out of memory.*OUT_OF_MEMORY/);
    assert.match(describeOutcome(h(), 'NODE_FAIL', 'NodeDown', undefined).minorStatus, /Node failure.*NODE_FAIL, reason NodeDown/);
    assert.match(describeOutcome(h(), 'FAILED', 'None', { kind: 'not-found' }).minorStatus, /Cannot start 'prog': no such executable/);
    // An Executable of any length (a client's) leaves a MinorStatus within minor_status's 512 characters.
    const long = describeOutcome({ slurmId: '7', job: { manifest: { Executable: `/no/such/${'x'.repeat(600)}` } } }, 'FAILED', 'None', { kind: 'not-found' }).minorStatus;
    assert.ok(long.length <= 512, `${long.length} characters`);
    assert.match(long, /^Cannot start '\/no\/such\/x+…': no such executable$/);
    assert.match(describeOutcome(h(), 'BOOT_FAIL', 'None', undefined).minorStatus, /BOOT_FAIL/);
    assert.equal(describeOutcome(h(), 'PREEMPTED', 'None', undefined).outcome, 'failed');
  });
  test('CPUTime becomes whole minutes of --time, rounded up', () => {
    assert.equal(timeLimitMinutes(1), 1);
    assert.equal(timeLimitMinutes(60), 1);
    assert.equal(timeLimitMinutes(61), 2);
    assert.equal(timeLimitMinutes(3600), 60);
  });
  test('exit records', () => {
    assert.deepEqual(parseExitRecord('exit 0\n'), { kind: 'exit', code: 0 });
    assert.deepEqual(parseExitRecord('not-found\n'), { kind: 'not-found' });
    assert.deepEqual(parseExitRecord('setup-failed no room\n'), { kind: 'setup-failed', why: 'no room' });
    assert.equal(parseExitRecord('exit; rm -rf /'), undefined);
  });
});

describe('the batch script (run by bash, without Slurm)', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  function runScript(input: Parameters<typeof batchScript>[0], files: Record<string, string> = {}, setup?: (stage: string) => void): { stage: string; status: number | null } {
    const stage = mkdtempSync(join(tmpdir(), 'dirigo-slurm-stage-'));
    dirs.push(stage);
    setup?.(stage);
    if (Object.keys(files).length > 0) {
      const src = join(stage, 'src');
      mkdirSync(src);
      for (const [name, content] of Object.entries(files)) writeFileSync(join(src, name), content);
      execFileSync('tar', ['-czf', join(stage, 'input.tar.gz'), '-C', src, ...Object.keys(files)]);
      rmSync(src, { recursive: true });
    }
    writeFileSync(join(stage, 'job.sh'), batchScript(input), { mode: 0o700 });
    const r = spawnSync('/bin/bash', [join(stage, 'job.sh')], { cwd: stage, env: { PATH: '/usr/bin:/bin', SECRET_OF_SERVER: 'x' } });
    return { stage, status: r.status };
  }

  test('arguments reach the payload word for word: nothing is expanded, quotes and $ survive', () => {
    const argv = ['$HOME', '`id`', "it's", 'a b', '*', '$(touch pwned)', ''];
    const { stage, status } = runScript({ jobId: 5, site: 'S', executable: '/usr/bin/printf', argv: ['%s|', ...argv], environment: { FOO: "x'y $z" }, stdout: 'out', stderr: 'err', hasInput: false });
    assert.equal(status, 0);
    assert.equal(readFileSync(join(stage, 'work', 'out'), 'utf8'), argv.map((a) => `${a}|`).join(''));
    assert.equal(existsSync(join(stage, 'work', 'pwned')), false);
    assert.deepEqual(parseExitRecord(readFileSync(join(stage, 'exit'), 'utf8')), { kind: 'exit', code: 0 });
  });

  test('a clean environment: the manifest Environment and DIRIGO_* only, never the server\'s', () => {
    const { stage } = runScript({ jobId: 6, site: 'S', executable: '/usr/bin/env', argv: [], environment: { FOO: "x'y $z" }, stdout: 'out', stderr: 'err', hasInput: false });
    const env = readFileSync(join(stage, 'work', 'out'), 'utf8');
    assert.match(env, /^FOO=x'y \$z$/m);
    assert.match(env, /^DIRIGO_JOB_ID=6$/m);
    assert.match(env, /^DIRIGO_SITE=S$/m);
    assert.doesNotMatch(env, /SECRET_OF_SERVER/);
  });

  test('the input sandbox is unpacked and a bare executable name runs from it; the exit code is recorded', () => {
    const { stage, status } = runScript(
      { jobId: 7, site: 'S', executable: 'run.sh', argv: ['x'], environment: {}, stdout: 'std.out', stderr: 'std.err', hasInput: true },
      { 'run.sh': '#!/bin/sh\ncat data.txt; echo "arg $1"; echo oops >&2; exit 4\n', 'data.txt': 'data\n' },
    );
    assert.equal(status, 4);
    assert.equal(readFileSync(join(stage, 'work', 'std.out'), 'utf8'), 'data\narg x\n');
    assert.equal(readFileSync(join(stage, 'work', 'std.err'), 'utf8'), 'oops\n');
    assert.deepEqual(parseExitRecord(readFileSync(join(stage, 'exit'), 'utf8')), { kind: 'exit', code: 4 });
  });

  test('dirigo of the staged folder comes first in PATH, even as the Executable and with a manifest PATH', () => {
    const setup = (stage: string) => {
      mkdirSync(join(stage, '.dirigo-bin'));
      writeFileSync(join(stage, '.dirigo-bin', 'dirigo'), cliScript(ownCommand()!), { mode: 0o755 });
    };
    const input = { jobId: 9, site: 'S', executable: 'dirigo', argv: ['--version'], environment: { PATH: '/bin' }, stdout: 'o', stderr: 'e', hasInput: false, cliFolder: '.dirigo-bin' };
    const { stage, status } = runScript(input, {}, setup);
    assert.equal(status, 0, readFileSync(join(stage, 'work', 'e'), 'utf8'));
    assert.match(readFileSync(join(stage, 'work', 'o'), 'utf8'), /^dirigo \d/);
    const env = runScript({ ...input, executable: '/bin/sh', argv: ['-c', 'echo "$PATH"'] }, {}, setup);
    assert.equal(readFileSync(join(env.stage, 'work', 'o'), 'utf8'), `${realpathSync(env.stage)}/.dirigo-bin:/bin\n`);
  });

  test('a missing executable is recorded as not-found', () => {
    const { stage, status } = runScript({ jobId: 8, site: 'S', executable: 'no-such-program-here', argv: [], environment: {}, stdout: 'o', stderr: 'e', hasInput: false });
    assert.equal(status, 127);
    assert.deepEqual(parseExitRecord(readFileSync(join(stage, 'exit'), 'utf8')), { kind: 'not-found' });
  });

  test('shell quoting refuses NUL and round-trips through sh', () => {
    assert.throws(() => shellQuote('a\0b'));
    for (const v of ["'", "''", 'a\nb', '\\', '"$x"']) assert.equal(execFileSync('/bin/sh', ['-c', `printf %s ${shellQuote(v)}`], { encoding: 'utf8' }), v);
  });
});
