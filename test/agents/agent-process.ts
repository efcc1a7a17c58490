/** `dirigo agent` as a real child process, authenticated with the test PKI's `pilot` certificate (flow A). */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestPki } from '../helpers/pki.ts';
import { TEST_SETUP } from '../helpers/service.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

export interface AgentProcess {
  child: ChildProcess;
  /** Everything it wrote to stderr so far. */
  log(): string;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function startAgent(url: string, pki: TestPki, options: { site: string; slots?: number; user?: string; group?: string; extra?: string[]; workDir?: string }): AgentProcess {
  const user = pki.users[options.user ?? 'pilot']!;
  // A given work directory is an agent started again where it ran before.
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), 'dirigo-agent-'));
  const child = spawn(
    process.execPath,
    [
      join(ROOT, 'bin/dirigo.js'),
      'agent',
      '--url', url,
      '--site', options.site,
      '--slots', String(options.slots ?? 2),
      '--cert', user.certFile,
      '--key', user.keyFile,
      '--ca', pki.caFile,
      '--group', options.group ?? 'dirigo_pilot',
      '--setup', TEST_SETUP,
      '--poll', '0.1',
      '--work-dir', workDir,
      ...(options.extra ?? []),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    log: () => err,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
