/**
 * The README runs as written: every shell block of README.md and docs/*.md, in order, in one shell, with
 * the commands exactly as printed, against the embedded default started with `npm start` in a fresh
 * folder laid out as a clone (the repository's files linked in, its own `dirigo-data/`). Output shown as
 * `# => ...` comments is compared; a block after `<!-- not run: REASON -->` is skipped and the reason
 * printed. The server listens on the README's own address, 127.0.0.1:8443.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Agent, request } from 'undici';
import { missingOutput, shellBlocks, type ShellBlock } from './shell-blocks.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const DOCUMENTS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
/** What the blocks call besides the CLI: each a Debian package that .ci/run installs. */
const TOOLS = ['curl', 'openssl', 'python3', 'tar', 'grid-proxy-init', 'grid-proxy-info', 'voms-proxy-init3', 'voms-proxy-info3'];
const LINKED = ['package.json', 'package-lock.json', 'node_modules', 'bin', 'src', 'packages', 'scripts', 'tsconfig.json'];

const absent = TOOLS.filter((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0);
const missing = absent.length > 0 && `the README's tools are missing: ${absent.join(', ')} (see .ci/run)`;
if (missing && process.env.CI === 'true') throw new Error(missing);
if (missing) process.stderr.write(`\n*** README test SKIPPED: ${missing} ***\n\n`);

/** The environment of a new user's shell: Node 24 first on PATH, and nothing of this machine's credentials. */
function userEnvironment(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(DIRIGO_|X509_|BEARER_TOKEN|XDG_|npm_|NODE_)/.test(k)) env[k] = v;
  }
  return { ...env, HOME: home, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` };
}

async function untilServing(ca: string, server: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`npm start exited with ${server.exitCode}:\n${log()}`);
    if (existsSync(ca)) {
      const agent = new Agent({ connect: { ca: readFileSync(ca) } });
      try {
        const res = await request('https://127.0.0.1:8443/readyz', { dispatcher: agent });
        await res.body.dump();
        if (res.statusCode === 200) return;
      } catch {
        // not listening yet
      } finally {
        await agent.close();
      }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`npm start did not serve within 2 minutes:\n${log()}`);
}

/** One bash script running `blocks` in order, each block's output to out.<n>, the running block's index to `current`. */
function runnerScript(blocks: readonly ShellBlock[], runDir: string): string {
  const parts = ['set -eo pipefail'];
  blocks.forEach((b, n) => {
    parts.push(`# ${b.file}:${b.line}`, `echo ${n} > '${runDir}/current'`, '{', b.script, `} > '${runDir}/out.${n}' 2>&1 < /dev/null`);
  });
  parts.push(`echo done > '${runDir}/current'`);
  return parts.join('\n') + '\n';
}

describe('README and docs/: every shell block runs as printed', { skip: missing }, () => {
  const clone = mkdtempSync(join(tmpdir(), 'dirigo-readme-'));
  const runDir = join(clone, '.readme-run');
  const env = userEnvironment(join(clone, '.home'));
  let server: ChildProcess;
  let serverLog = '';

  before(async () => {
    for (const name of LINKED) symlinkSync(join(ROOT, name), join(clone, name));
    mkdirSync(runDir);
    mkdirSync(env.HOME!);
    // curl draws no progress meter when its output goes to a terminal, as in a reader's shell; here it
    // goes to a file, so the meter is turned off to show the output the reader would see.
    writeFileSync(join(env.HOME!, '.curlrc'), 'no-progress-meter\n');
    server = spawn('npm', ['start'], { cwd: clone, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    server.stdout!.on('data', (d: Buffer) => (serverLog += d.toString()));
    server.stderr!.on('data', (d: Buffer) => (serverLog += d.toString()));
    await untilServing(join(clone, 'dirigo-data/pki/ca.crt'), server, () => serverLog);
  });

  after(() => {
    if (server?.pid && server.exitCode === null) process.kill(-server.pid, 'SIGTERM');
  });

  it('runs every block, and each prints the output its comments show', { timeout: 600_000 }, () => {
    const blocks = DOCUMENTS.flatMap((doc) => shellBlocks(join(ROOT, doc)).map((b) => ({ ...b, file: doc })));
    const runnable = blocks.filter((b) => !b.notRun);
    for (const b of blocks.filter((b) => b.notRun)) process.stdout.write(`# not run: ${b.file}:${b.line} (${b.notRun})\n`);
    assert.ok(runnable.length >= 10, `only ${runnable.length} runnable blocks found`);
    const scriptFile = join(runDir, 'blocks.sh');
    writeFileSync(scriptFile, runnerScript(runnable, runDir));
    const run = spawnSync('bash', [scriptFile], { cwd: clone, env, encoding: 'utf8', timeout: 540_000 });
    const current = readFileSync(join(runDir, 'current'), 'utf8').trim();
    const outputOf = (n: number) => (existsSync(join(runDir, `out.${n}`)) ? readFileSync(join(runDir, `out.${n}`), 'utf8') : '');
    if (current !== 'done') {
      const b = runnable[Number(current)]!;
      assert.fail(`${b.file}:${b.line}: the block failed (bash exited ${run.status ?? run.signal}):\n${outputOf(Number(current))}${run.stderr}\n--- server log (tail) ---\n${serverLog.slice(-3000)}`);
    }
    const mismatches = runnable.flatMap((b, n) => {
      const output = outputOf(n);
      const absentLine = missingOutput(b.expected, output);
      return absentLine === undefined ? [] : [`${b.file}:${b.line}: the output lacks '${absentLine}' (after the lines before it):\n${output}`];
    });
    assert.deepEqual(mismatches, []);
  });
});
