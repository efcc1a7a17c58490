/**
 * The pilot factory's pure parts: the batch script (run by a real bash with a `dirigo` that records what
 * it was given), the sbatch options, the decision arithmetic, the partitions and the output's tail.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { agentArguments, pilotCpuTime, pilotScript, type PilotAgentInput } from '../../../src/agents/factory/script.ts';
import { pilotsToSubmit } from '../../../src/agents/factory/decide.ts';
import { factoryPartitions, pilotSecret } from '../../../src/agents/factory/factory.ts';
import { sbatchOptions, slurmMinutes } from '../../../src/agents/factory/slurm-batch.ts';
import { MAX_PILOT_LOG, tailOf } from '../../../src/agents/factory/staging.ts';

/** A `dirigo` that writes its arguments (one per line) and the secret it was given into `out`. */
function fakeDirigo(dir: string, out: string): void {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'dirigo');
  writeFileSync(file, `#!/bin/bash\nfor a in "$@"; do printf '%s\\n' "$a"; done > ${JSON.stringify(out)}\nprintf '%s' "$DIRIGO_PILOT_SECRET" > ${JSON.stringify(`${out}.secret`)}\n`);
  chmodSync(file, 0o755);
}

describe('pilot script', () => {
  const hostile = `it's "$(touch /tmp/pwned)" \`id\` $HOME;`;
  const agent: PilotAgentInput = {
    url: `https://dirigo.example:8443/${hostile}`,
    ca: `/etc/ca dir/${hostile}.crt`,
    site: 'Pool',
    pilotId: 42,
    slots: 2,
    cores: 4,
    memoryMb: 2048,
    gpus: 1,
    cpuTime: 3480,
    idleTimeoutSeconds: 60,
    resource: 'debug',
    workDir: '',
  };

  test('it runs `dirigo agent` with every word as given and the secret in its environment, expanding nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pilot-script-'));
    const bin = join(dir, `bin ${hostile}`);
    const out = join(dir, 'argv');
    fakeDirigo(bin, out);
    const workDir = join(dir, `work ${hostile}`);
    const secret = `${pilotSecret().secret}'$x`;
    const script = join(dir, 'pilot.sh');
    writeFileSync(script, pilotScript({ pilotId: 42, site: 'Pool', secret, agent: { ...agent, workDir }, cliFolder: bin }), { mode: 0o700 });
    execFileSync('bash', ['-n', script]);
    execFileSync('bash', [script], { env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent' } });
    const argv = readFileSync(out, 'utf8').split('\n').slice(0, -1);
    assert.deepEqual(argv, agentArguments({ ...agent, workDir }));
    assert.deepEqual(argv.slice(0, 5), ['agent', '--url', agent.url, '--ca', agent.ca]);
    assert.equal(readFileSync(`${out}.secret`, 'utf8'), secret);
    // The work directory is made before the agent starts; nothing was run by the shell.
    assert.ok(statSync(workDir).isDirectory());
    assert.throws(() => statSync('/tmp/pwned'));
  });

  test('optional words: no --ca without a CA, no --memory without memory, no --resource for the default partition', () => {
    const argv = agentArguments({ ...agent, ca: undefined, memoryMb: undefined, resource: '', workDir: '/w' });
    assert.deepEqual(argv, ['agent', '--url', agent.url, '--site', 'Pool', '--pilot-id', '42', '--slots', '2', '--cores', '4', '--gpus', '1', '--cpu-time', '3480', '--idle-timeout', '60', '--work-dir', '/w']);
  });

  test("a pilot offers its time limit less a margin for its reports; sbatch's --time is whole minutes, rounded up", () => {
    assert.equal(pilotCpuTime(3600), 3480);
    assert.equal(pilotCpuTime(60), 54);
    assert.equal(pilotCpuTime(86400), 86280);
    assert.equal(slurmMinutes(60), 1);
    assert.equal(slurmMinutes(61), 2);
    const options = sbatchOptions({ name: 'dirigo-pilot-7', dir: '/s/7', output: '/s/7/pilot.log', partition: 'short', cores: 2, memoryMb: 1000, gpus: 1, timeLimitSeconds: 90, account: 'acct', extra: ['--qos=low'] });
    for (const o of ['--job-name=dirigo-pilot-7', '--chdir=/s/7', '--output=/s/7/pilot.log', '--partition=short', '--account=acct', '--cpus-per-task=2', '--mem=1000M', '--gres=gpu:1', '--time=2']) assert.ok(options.includes(o), o);
    assert.equal(options.at(-1), '--qos=low');
    const plain = sbatchOptions({ name: 'p', dir: '/d', output: '/d/o', partition: '', cores: 1, gpus: 0, timeLimitSeconds: 60, extra: [] });
    assert.ok(!plain.some((o) => /^--(partition|mem|gres|account)=/.test(o)), plain.join(' '));
  });

  test('a fresh secret each time: 32 bytes in base64url, the row keeps its SHA-256 in hex', () => {
    const a = pilotSecret();
    const b = pilotSecret();
    assert.notEqual(a.secret, b.secret);
    assert.equal(Buffer.from(a.secret, 'base64url').length, 32);
    assert.match(a.hash, /^[0-9a-f]{64}$/);
  });
});

describe('pilot factory decisions', () => {
  const limits = { maxWaiting: 2, maxPilots: 10, slots: 1 };
  test('submits up to maxWaiting queued pilots, maxPilots live ones, and no more slots than Waiting jobs', () => {
    assert.equal(pilotsToSubmit({ queued: 0, total: 0 }, 50, limits), 2);
    assert.equal(pilotsToSubmit({ queued: 1, total: 5 }, 50, limits), 1);
    assert.equal(pilotsToSubmit({ queued: 2, total: 2 }, 50, limits), 0);
    assert.equal(pilotsToSubmit({ queued: 0, total: 9 }, 50, limits), 1);
    assert.equal(pilotsToSubmit({ queued: 0, total: 10 }, 50, limits), 0);
    assert.equal(pilotsToSubmit({ queued: 0, total: 0 }, 1, limits), 1);
    assert.equal(pilotsToSubmit({ queued: 1, total: 1 }, 1, limits), 0);
    assert.equal(pilotsToSubmit({ queued: 0, total: 3 }, 0, limits), 0);
  });

  test('a pilot of several slots counts for several jobs', () => {
    const four = { maxWaiting: 5, maxPilots: 10, slots: 4 };
    assert.equal(pilotsToSubmit({ queued: 0, total: 0 }, 9, four), 3);
    assert.equal(pilotsToSubmit({ queued: 2, total: 2 }, 9, four), 1);
    assert.equal(pilotsToSubmit({ queued: 3, total: 3 }, 9, four), 0);
    assert.equal(pilotsToSubmit({ queued: 0, total: 0 }, 3, four), 1);
  });

  test('limits already passed (a lowered configuration) submit nothing', () => {
    assert.equal(pilotsToSubmit({ queued: 5, total: 20 }, 100, limits), 0);
    assert.equal(pilotsToSubmit({ queued: 0, total: 0 }, 100, { maxWaiting: 0, maxPilots: 10, slots: 1 }), 0);
  });

  test('partitions: each configured one once, or the batch system default', () => {
    assert.deepEqual(factoryPartitions({ partition: 'debug,short,debug' }), ['debug', 'short']);
    assert.deepEqual(factoryPartitions({}), ['']);
  });
});

describe('pilot output', () => {
  test('the last MiB of a larger output, without NUL bytes; nothing for a missing file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pilot-log-'));
    const file = join(dir, 'pilot.log');
    writeFileSync(file, Buffer.concat([Buffer.alloc(100, 'a'), Buffer.from('b\0c'), Buffer.alloc(MAX_PILOT_LOG - 6, 'z'), Buffer.from('end\n')]));
    const text = await tailOf(file);
    assert.ok(text.endsWith('zzzend\n'));
    assert.ok(text.startsWith('czz'), text.slice(0, 10));
    assert.equal(text.length, MAX_PILOT_LOG - 1);
    assert.equal(await tailOf(join(dir, 'none')), '');
  });

  test('a symbolic link or a FIFO in place of the output, or of its directory, is not read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pilot-log-'));
    const secret = join(dir, 'secret');
    writeFileSync(secret, 'the service key\n');
    mkdirSync(join(dir, '1'));
    symlinkSync(secret, join(dir, '1', 'pilot.log'));
    assert.equal(await tailOf(join(dir, '1', 'pilot.log')), '');
    mkdirSync(join(dir, 'real'));
    writeFileSync(join(dir, 'real', 'pilot.log'), 'output\n');
    symlinkSync(join(dir, 'real'), join(dir, '2'));
    assert.equal(await tailOf(join(dir, '2', 'pilot.log')), '');
    assert.equal(await tailOf(join(dir, 'real', 'pilot.log')), 'output\n');
    mkdirSync(join(dir, '3'));
    execFileSync('mkfifo', [join(dir, '3', 'pilot.log')]);
    assert.equal(await tailOf(join(dir, '3', 'pilot.log')), '');
  });
});
