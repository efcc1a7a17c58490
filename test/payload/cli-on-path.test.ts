/**
 * The `dirigo` command payloads find on their PATH runs this very software: this Node with the
 * package's own `bin` entry (from the running code, not the current directory). In the bubblewrap
 * sandbox its folder is shown read-only, while a CA that a manifest names in its own Environment (not the
 * service's) is not shown when it lies in a hidden place.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliScript, ownCommand, writeCliFolder } from '../../src/payload/cli-on-path.ts';
import { LocalExecutor } from '../../src/payload/local.ts';
import { PayloadSandbox } from '../../src/payload/payload-sandbox.ts';
import type { ExecutorEvent } from '../../src/payload/executor.ts';
import { FileSandboxStore } from '../../src/jobs/sandbox-store.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const quiet = { warn() {}, info() {} };
const noSandbox = await new PayloadSandbox({ hide: [], workRoot: tmpdir() }).check();

describe('the dirigo command inside jobs', () => {
  it('is this Node with the package bin entry, written as a script that runs from anywhere', async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; bin: { dirigo: string } };
    assert.deepEqual(ownCommand(), [process.execPath, join(ROOT, pkg.bin.dirigo)]);
    assert.equal(cliScript(['/opt/it\'s/node', 'a b']).split('\n')[2], `exec '/opt/it'\\''s/node' 'a b' "$@"`);
    const parent = join(mkdtempSync(join(tmpdir(), 'cli-')), 'work');
    const folder = await writeCliFolder(parent);
    assert.equal(folder, join(parent, '.dirigo-bin'));
    assert.equal(statSync(parent).mode & 0o777, 0o700, 'the working directory stays private');
    assert.equal(statSync(join(folder, 'dirigo')).mode & 0o777, 0o755);
    await writeCliFolder(parent); // again: replaced, not refused
    const out = execFileSync('/bin/sh', ['-c', 'dirigo --version'], { cwd: tmpdir(), env: { PATH: `${folder}:/usr/bin:/bin` }, encoding: 'utf8' });
    assert.match(out, new RegExp(`^dirigo ${pkg.version.replaceAll('.', '\\.')}`));
  });

  it('in the sandbox: dirigo is shown read-only; a hidden file named by the manifest as DIRIGO_CA is not', { skip: noSandbox ?? false }, async () => {
    const base = mkdtempSync(join(tmpdir(), 'cli-sandbox-'));
    const secret = join(base, 'secret');
    mkdirSync(secret);
    writeFileSync(join(secret, 'server.key'), 'PRIVATE KEY');
    const workDir = join(base, 'work');
    const store = new FileSandboxStore(join(base, 'store'));
    const executor = new LocalExecutor({
      site: { name: 'Local', type: 'local', slots: 1, workDir, keepWorkDirs: true },
      workDir,
      sandbox: new PayloadSandbox({ hide: [secret], workRoot: workDir }),
      store,
      slots: 1,
      killGraceMs: 500,
      cpuCheckIntervalMs: 1000,
      limits: { maxFileSize: 1e6, maxSandboxSize: 1e6, maxFiles: 10 },
      log: quiet,
    });
    let finished: (e: ExecutorEvent) => void = () => {};
    const done = new Promise<ExecutorEvent>((resolve) => (finished = resolve));
    let woken: () => void = () => {};
    const ready = new Promise<void>((resolve) => (woken = resolve));
    executor.start(async (e) => {
      if (e.kind === 'finished') finished(e);
      return true;
    }, () => woken());
    await ready;
    const script = 'cat "$DIRIGO_CA"; command -v dirigo; dirigo --version; (: > "$(command -v dirigo)") 2>/dev/null && echo writable || echo read-only';
    await executor.submit({
      jobId: 7,
      manifest: { Executable: '/bin/sh', Environment: { DIRIGO_CA: join(secret, 'server.key') } },
      argv: ['-c', script],
      inputSandbox: null,
      owner: 'alice',
      ownerGroup: 'users',
      rescheduleCounter: 0,
    });
    const event = await done;
    const stdout = readFileSync(join(workDir, '7', 'std.out'), 'utf8');
    const stderr = readFileSync(join(workDir, '7', 'std.err'), 'utf8');
    await executor.close?.();
    assert.equal(event.kind === 'finished' && event.outcome, 'done', stderr);
    assert.doesNotMatch(stdout, /PRIVATE KEY/);
    assert.match(stderr, /server\.key: No such file or directory/);
    assert.match(stdout, new RegExp(`^${join(workDir, '.dirigo-bin', 'dirigo')}\ndirigo \\S+.*\nread-only\n$`));
  });
});
