/**
 * `dirigo serve` as a child process with any arguments, for the tests of the command itself
 * (test/app/serve.test.ts, test/app/system-layout.test.ts); serve-process.ts starts one from a prepared
 * configuration for benchmarks and load tests. Ready once the banner names the API docs. A start that
 * times out kills the child, so a test file never waits on a stray server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const DIRIGO = join(import.meta.dirname, '..', '..', 'bin', 'dirigo.js');

export function spawnServe(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ child: ChildProcess; banner: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DIRIGO, 'serve', '--log-level', 'warn', ...args], { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.removeAllListeners('exit');
      child.kill('SIGKILL');
      reject(new Error(`serve did not start: ${out}${err}`));
    }, 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('API docs')) {
        clearTimeout(timer);
        resolve({ child, banner: out });
      }
    });
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${out}${err}`));
    });
  });
}

/** SIGTERM, as systemd and a terminal's Ctrl-C stop it; resolves with the exit code. */
export function terminateServe(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}
