/**
 * `dirigo agent` as a real child process, authenticated with the test PKI's `pilot` certificate (flow A),
 * or, with `pilot`, as a factory pilot with its secret (DIRIGO_PILOT_SECRET).
 */
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

export function startAgent(
  url: string,
  pki: TestPki,
  options: { site: string; slots?: number; user?: string; group?: string; extra?: string[]; workDir?: string; pilot?: { id: number; secret: string } },
): AgentProcess {
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
      ...(options.pilot
        ? ['--pilot-id', String(options.pilot.id)]
        : ['--cert', user.certFile, '--key', user.keyFile, '--group', options.group ?? 'dirigo_pilot', '--setup', TEST_SETUP]),
      '--ca', pki.caFile,
      '--poll', '0.1',
      '--work-dir', workDir,
      ...(options.extra ?? []),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...(options.pilot ? { DIRIGO_PILOT_SECRET: options.pilot.secret } : {}) } },
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
