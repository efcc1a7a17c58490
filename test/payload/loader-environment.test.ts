/**
 * A job's loader variables (LD_PRELOAD...) steer only the processes on the payload's side: a shared
 * library shipped in the input sandbox, whose constructor records the name of every process that loads
 * it, is loaded by the payload (and the /bin/sh that waits for it) but never by bwrap or the python3
 * measuring wrapper, which run outside the sandbox as the service's user. The payload still sees the
 * variables it asked for. Run with and without a sandbox, with and without python3.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createReadStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LocalExecutor } from '../../src/payload/local.ts';
import { PayloadSandbox } from '../../src/payload/payload-sandbox.ts';
import { PASSED_ENV, splitLoaderVariables } from '../../src/payload/loader-environment.ts';
import type { ExecutorEvent } from '../../src/payload/executor.ts';
import { FileSandboxStore } from '../../src/jobs/sandbox-store.ts';

/** Appends /proc/self/comm of the process that loads it to ./loaded.txt (the process's working directory). */
const PROBE = `
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void probe(void) {
  char name[64];
  int in = open("/proc/self/comm", O_RDONLY);
  if (in < 0) return;
  ssize_t n = read(in, name, sizeof name);
  close(in);
  int out = open("loaded.txt", O_WRONLY | O_APPEND | O_CREAT, 0600);
  if (out < 0 || n <= 0) return;
  (void)!write(out, name, (size_t)n);
  close(out);
}
`;

function compiler(): string | undefined {
  try {
    execFileSync('g++', ['--version'], { stdio: 'ignore' });
    return 'g++';
  } catch {
    if (process.env.CI === 'true') throw new Error('g++ is required under CI');
    return undefined;
  }
}

describe('loader variables of a job', () => {
  const cc = compiler();
  let base: string;
  let store: FileSandboxStore;
  let input: string;

  before(async () => {
    if (!cc) return;
    base = mkdtempSync(join(tmpdir(), 'dirigo-loader-'));
    const src = join(base, 'src');
    mkdirSync(src);
    writeFileSync(join(src, 'probe.c'), PROBE);
    execFileSync(cc, ['-x', 'c', '-shared', '-fPIC', '-o', join(src, 'probe.so'), join(src, 'probe.c')]);
    execFileSync('tar', ['-czf', join(base, 'input.tar.gz'), '-C', src, 'probe.so']);
    store = new FileSandboxStore(join(base, 'store'));
    input = (await store.put(createReadStream(join(base, 'input.tar.gz')))).sha256;
  });
  after(() => {
    if (base) rmSync(base, { recursive: true, force: true });
  });

  test('only names on the payload side are split off; the job token stays in the environment', () => {
    const { outside, loader } = splitLoaderVariables({ LD_PRELOAD: 'a', LD_FOO: 'b', MALLOC_ARENA_MAX: '2', GCONV_PATH: 'g', GLIBC_TUNABLES: 't', TMPDIR: '/w', [PASSED_ENV]: '{}', PATH: '/bin', DIRIGO_JOB_TOKEN: 'secret', HOME: '/w', OLD_PRELOAD: 'x' });
    assert.deepEqual(Object.keys(loader).sort(), ['DIRIGO_PAYLOAD_LOADER_ENV', 'GCONV_PATH', 'GLIBC_TUNABLES', 'LD_FOO', 'LD_PRELOAD', 'MALLOC_ARENA_MAX', 'TMPDIR']);
    assert.deepEqual(outside, { PATH: '/bin', DIRIGO_JOB_TOKEN: 'secret', HOME: '/w', OLD_PRELOAD: 'x' });
  });

  let jobId = 0;
  for (const sandboxed of [true, false]) {
    for (const withPython of [true, false]) {
      const name = `${sandboxed ? 'in a bubblewrap sandbox' : 'without a sandbox'}, ${withPython ? 'measured by python3' : 'without python3'}`;
      test(name, { timeout: 60_000 }, async (t) => {
        if (!cc) return t.skip('no C compiler (g++) here: install g++ to run this test');
        const id = ++jobId;
        const workDir = join(base, `work-${id}`);
        const sandbox = sandboxed ? new PayloadSandbox({ hide: [], workRoot: workDir }) : undefined;
        if (sandbox) assert.equal(await sandbox.check(), undefined, 'bubblewrap works here');
        const executor = new LocalExecutor({
          site: { name: 'Local', type: 'local', slots: 1, workDir, keepWorkDirs: true },
          workDir,
          store,
          slots: 1,
          killGraceMs: 500,
          cpuCheckIntervalMs: 100,
          limits: { maxFileSize: 1e6, maxSandboxSize: 1e6, maxFiles: 10 },
          log: { warn() {} },
          ...(sandbox ? { sandbox } : {}),
          ...(withPython ? {} : { python: null }),
        });
        const done = new Promise<ExecutorEvent>((resolve) => executor.start(async (e) => (e.kind === 'finished' && resolve(e), true), () => {}));
        const dir = join(workDir, String(id));
        const so = join(dir, 'probe.so');
        // The variable that carries loader variables through the wrapper, set by the job: it must not smuggle them out.
        const smuggled = JSON.stringify({ LD_PRELOAD: so });
        const Environment = { LD_PRELOAD: so, GCONV_PATH: dir, [PASSED_ENV]: smuggled, PLAIN: 'kept' };
        await executor.submit({ jobId: id, manifest: { Executable: 'env', Environment }, argv: [], inputSandbox: input, owner: 'alice', ownerGroup: 'dirigo_user', rescheduleCounter: 0, environment: { DIRIGO_JOB_TOKEN: 'token-in-env' } });
        const event = await done;
        await executor.close();
        assert.ok(event.kind === 'finished' && event.outcome === 'done', JSON.stringify(event));

        const loaded = readFileSync(join(dir, 'loaded.txt'), 'utf8').split('\n').filter(Boolean);
        assert.ok(loaded.includes('env'), `the payload loaded it: ${loaded.join(', ')}`);
        // sh, the wrapper that waits for the payload, and the mv that writes its exit record are on the payload's side.
        assert.deepEqual(loaded.filter((p) => !['env', 'sh', 'mv'].includes(p)), [], 'no process outside the payload loaded it (bwrap, python3)');

        const seen = new Map(readFileSync(join(dir, 'std.out'), 'utf8').split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
        assert.equal(seen.get('LD_PRELOAD'), so);
        assert.equal(seen.get('GCONV_PATH'), dir);
        assert.equal(seen.get(PASSED_ENV), smuggled);
        assert.equal(seen.get('PLAIN'), 'kept');
        assert.equal(seen.get('DIRIGO_JOB_TOKEN'), 'token-in-env');
        assert.equal(seen.get('TMPDIR'), dir);
      });
    }
  }
});
