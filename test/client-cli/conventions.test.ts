/**
 * Unix conventions of the CLI: every command's --help has an example; completion scripts for bash, zsh
 * and fish that the shells themselves load and answer from; on a terminal (a real pseudo-terminal made
 * by util-linux's `script`) tables fit its width and statuses are coloured, never with NO_COLOR and never
 * in a pipe; a watched workflow is redrawn there, and written as lines in a pipe.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import type { TestService } from '../helpers/service.ts';
import { TEST_SETUP } from '../helpers/service.ts';
import { startJobsService } from '../jobs/helpers.ts';

const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;
const ESC = '\x1b[';

function run(file: string, args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(file, args, { env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), ...env }, cwd, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

const dirigo = (args: string[], env?: NodeJS.ProcessEnv) => run(process.execPath, [BIN, ...args], env);
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const have = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;

describe('CLI conventions', () => {
  it('every command answers --help with its usage and an example, and exits 0', async () => {
    const top = await dirigo(['--help']);
    assert.equal(top.code, 0);
    const names = [...top.stdout.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]!);
    assert.ok(names.includes('jobs') && names.includes('completion'), top.stdout);
    for (const name of names) {
      const help = await dirigo([name, '--help']);
      assert.equal(help.code, 0, `${name}: ${help.stderr}`);
      assert.match(help.stdout, new RegExp(`usage: dirigo ${name}`), name);
      assert.match(help.stdout, /^examples?:\n {2}\S/m, `${name} --help shows no example`);
    }
    assert.equal((await dirigo(['jobs', '--nope'])).code, 2);
    assert.match((await dirigo(['--version'])).stdout, /^dirigo \d+\.\d+\.\d+ \(API \d+\.\d+\.\d+; speaks to servers with API \d+\.(\d+\.)?x\)\n$/);
  });

  it('bash completes commands, subcommands and options, then files', async () => {
    const script = (await dirigo(['completion', 'bash'])).stdout;
    const complete = (line: string) =>
      spawnSync('bash', ['-c', `${script}\nCOMP_WORDS=(${line}); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); _dirigo; echo "\${COMPREPLY[*]}"`], { encoding: 'utf8' }).stdout.trim();
    assert.equal(complete("dirigo jo"), 'jobs job');
    assert.equal(complete("dirigo jobs su"), 'submit summary');
    assert.equal(complete("dirigo jobs submit --ce"), '--cert');
    assert.equal(complete("dirigo proxy ''"), 'init info destroy');
    assert.equal(complete("dirigo workflow ''"), 'submit status list kill hold release');
    assert.equal(complete("dirigo jobs re"), 'release reschedule');
    assert.equal(complete("dirigo workflow status --wa"), '--watch');
    assert.equal(complete("dirigo jobs submit ''"), '', 'after the subcommand, bash offers files');
  });

  it('fish completes from the script it loads; zsh reads its script', { skip: !have('fish') || !have('zsh') ? 'fish or zsh is not installed (.ci/run installs them)' : false }, async () => {
    if (process.env.CI === 'true') assert.ok(have('fish') && have('zsh'));
    const work = mkdtempSync(join(tmpdir(), 'dirigo-completion-'));
    writeFileSync(join(work, 'dirigo.fish'), (await dirigo(['completion', 'fish'])).stdout);
    const fish = (line: string) => spawnSync('fish', ['--no-config', '-c', `source ${join(work, 'dirigo.fish')}; complete -C ${quote(line)}`], { encoding: 'utf8' }).stdout.split('\n').map((l) => l.split('\t')[0]).filter(Boolean);
    assert.deepEqual(fish('dirigo jo'), ['job', 'jobs']);
    assert.deepEqual(fish('dirigo catalogue sea'), ['search']);
    assert.ok(fish('dirigo jobs --ce').includes('--cert'));
    writeFileSync(join(work, '_dirigo'), (await dirigo(['completion', 'zsh'])).stdout);
    const zsh = spawnSync('zsh', ['-f', '-c', `autoload -U compinit && compinit -u -d ${join(work, 'zcompdump')} && source ${join(work, '_dirigo')} && print -r -- $_comps[dirigo]`], { encoding: 'utf8' });
    assert.equal(zsh.stdout.trim(), '_dirigo', zsh.stderr);
    assert.equal((await dirigo(['completion', 'tcsh'])).code, 2);
  });

  describe('tables and colours', () => {
    let svc: TestService;
    let work: string;
    let auth: string[];
    before(async () => {
      svc = await startJobsService('sqlite');
      work = mkdtempSync(join(tmpdir(), 'dirigo-terminal-'));
      const alice = svc.pki.users.alice!;
      auth = ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', alice.certFile, '--key', alice.keyFile, '--group', 'dirigo_user', '--setup', TEST_SETUP];
      writeFileSync(join(work, 'job.json'), JSON.stringify({ Executable: '/bin/true', JobName: 'a job name long enough to need cutting on a narrow terminal' }));
      const jid = (await run(process.execPath, [BIN, 'jobs', 'submit', 'job.json', ...auth], {}, work)).stdout.trim();
      assert.equal((await dirigo(['jobs', 'wait', jid, '--interval', '0.2', '--timeout', '60', ...auth])).code, 0);
    });
    after(() => svc?.close());

    /** `dirigo jobs list` on a pseudo-terminal `cols` wide. */
    const onTerminal = async (cols: number, env: NodeJS.ProcessEnv = {}) => {
      const command = `stty cols ${cols} rows 50; exec ${[process.execPath, BIN, 'jobs', 'list', ...auth].map(quote).join(' ')}`;
      const r = await run('script', ['-qec', command, '/dev/null'], { TERM: 'xterm', ...env });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      return r.stdout.replace(/\r/g, '');
    };

    it('on a terminal: rows fit its width and statuses are coloured', { skip: !have('script') && 'util-linux script is missing' }, async () => {
      const out = await onTerminal(70);
      assert.ok(out.includes(`${ESC}32mDone`), out);
      const widest = Math.max(...out.split('\n').map((l) => stripVTControlCharacters(l).length));
      assert.ok(widest <= 70, `a line of ${widest} characters on a 70-column terminal:\n${out}`);
      assert.match(out, /a job name…|…/);
    });

    it('NO_COLOR and pipes get no escape codes, and pipes get whole cells', { skip: !have('script') && 'util-linux script is missing' }, async () => {
      assert.ok(!(await onTerminal(70, { NO_COLOR: '1' })).includes(ESC));
      const piped = await dirigo(['jobs', 'list', ...auth]);
      assert.ok(!piped.stdout.includes(ESC));
      assert.match(piped.stdout, /a job name long enough to need cutting on a narrow terminal/);
    });

    it('workflow status --watch redraws on a terminal until the workflow ends; in a pipe it writes lines', { skip: !have('script') && 'util-linux script is missing' }, async () => {
      writeFileSync(join(work, 'two.json'), JSON.stringify({ Jobs: [{ NodeName: 'a', Executable: '/bin/true' }, { NodeName: 'b', Executable: '/bin/true', DependsOn: 'a' }] }));
      const submitted = await run(process.execPath, [BIN, 'workflow', 'submit', 'two.json', '--json', ...auth], {}, work);
      assert.equal(submitted.code, 0, submitted.stderr);
      const wid = String(JSON.parse(submitted.stdout).WorkflowID);
      const command = `stty cols 80 rows 30; exec ${[process.execPath, BIN, 'workflow', 'status', wid, '--watch', ...auth].map(quote).join(' ')}`;
      const r = await run('script', ['-qec', command, '/dev/null'], { TERM: 'xterm' });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const screens = r.stdout.replace(/\r/g, '').split(`${ESC}H${ESC}2J`).slice(1);
      assert.ok(screens.length >= 1, r.stdout);
      const last = stripVTControlCharacters(screens.at(-1)!);
      assert.match(last, /\nStatus\s+Done: 2 job\(s\); Done 2\n/);
      assert.match(last, /\nended\n$/);
      const piped = await dirigo(['workflow', 'status', wid, '--watch', ...auth]);
      assert.equal(piped.code, 0, piped.stderr);
      assert.ok(!piped.stdout.includes(ESC));
      assert.match(piped.stdout, new RegExp(`^\\S+Z  workflow ${wid}  Done: 2 job\\(s\\); Done 2\\n`));
    });
  });
});
