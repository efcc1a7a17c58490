/**
 * Real S3 servers nobody on the team wrote, started as child processes on a free port of 127.0.0.1 with
 * one bucket each: the machine Python's moto (`moto_server`) and s3rver from npm. Both answer path-style
 * requests, and virtual-host style ones at `<bucket>.s3.localhost:<port>` (endpoint `http://s3.localhost:<port>`:
 * curl resolves `*.localhost` to loopback by itself; Node needs {@link localhostAgent}).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

export type S3ServerName = 'moto' | 's3rver';

export interface S3Server {
  name: S3ServerName;
  port: number;
  /** `http://127.0.0.1:<port>`, for path-style requests. */
  endpoint: string;
  /** `http://s3.localhost:<port>`, for virtual-host style requests (`<bucket>.s3.localhost`). */
  vhostEndpoint: string;
  bucket: string;
  region: string;
  /** Credentials the server takes (moto takes any; s3rver checks signatures with its own pair). */
  accessKeyId: string;
  secretAccessKey: string;
  stop(): Promise<void>;
}

const REPO = join(import.meta.dirname, '..', '..');
const READY_MS = 60_000;
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts the child and waits for `ready` to match its output; the match's first group is the port. */
function startChild(name: string, command: string, args: string[], ready: RegExp): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let output = '';
    const timer = setTimeout(() => fail(new Error(`${name} did not start within ${READY_MS} ms:\n${output}`)), READY_MS);
    const fail = (err: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = ready.exec(output);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', onData).resume();
        child.stderr!.off('data', onData).resume();
        resolve({ child, port: Number(m[1]) });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', (err: NodeJS.ErrnoException) =>
      fail(err.code === 'ENOENT' ? new Error(`${command} not found: the S3 tests need it (${name === 'moto' ? "the machine Python's moto with its server: pip install 'moto[server]'" : 'npm ci'})`) : err),
    );
    child.once('exit', (code, signal) => {
      running.delete(child);
      fail(new Error(`${name} exited (${code ?? signal}) before it was ready:\n${output}`));
    });
  });
}

function stopper(child: ChildProcess, cleanup: () => void): () => Promise<void> {
  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    running.delete(child);
    cleanup();
  };
}

async function createBucket(server: Omit<S3Server, 'stop'>): Promise<void> {
  const client = new S3Client({ endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey } });
  try {
    await client.send(new CreateBucketCommand({ Bucket: server.bucket }));
  } finally {
    client.destroy();
  }
}

/** moto_server on a free port (in memory: nothing to clean but the process). */
export async function startMoto(bucket = 'dirigo-sandboxes'): Promise<S3Server> {
  const { child, port } = await startChild('moto', 'moto_server', ['-H', '127.0.0.1', '-p', '0'], /Running on http:\/\/127\.0\.0\.1:(\d+)/);
  const server = { name: 'moto' as const, port, endpoint: `http://127.0.0.1:${port}`, vhostEndpoint: `http://s3.localhost:${port}`, bucket, region: 'us-east-1', accessKeyId: 'moto-key', secretAccessKey: 'moto-secret' };
  const stop = stopper(child, () => {});
  try {
    await createBucket(server);
  } catch (err) {
    await stop();
    throw err;
  }
  return { ...server, stop };
}

/** s3rver (npm) on a free port, its objects in a folder of its own, removed when it stops. */
export async function startS3rver(bucket = 'dirigo-sandboxes'): Promise<S3Server> {
  const dir = mkdtempSync(join(tmpdir(), 's3rver-'));
  const bin = join(REPO, 'node_modules', 's3rver', 'bin', 's3rver.js');
  // --service-endpoint localhost: `<bucket>.s3.localhost` is the bucket's virtual host.
  const args = [bin, '-d', dir, '-a', '127.0.0.1', '-p', '0', '--silent', '--service-endpoint', 'localhost', '--configure-bucket', bucket];
  let started;
  try {
    started = await startChild('s3rver', process.execPath, args, /S3rver listening on [^:]+:(\d+)/);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const { child, port } = started;
  const stop = stopper(child, () => rmSync(dir, { recursive: true, force: true }));
  return { name: 's3rver', port, endpoint: `http://127.0.0.1:${port}`, vhostEndpoint: `http://s3.localhost:${port}`, bucket, region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', stop };
}

export const S3_SERVERS: Record<S3ServerName, (bucket?: string) => Promise<S3Server>> = { moto: startMoto, s3rver: startS3rver };

/**
 * An HTTP agent that resolves `*.localhost` to 127.0.0.1 as curl and browsers do (RFC 6761 §6.3); the
 * system resolver here does not. For the SDK's request handler in virtual-host tests.
 */
export function localhostAgent(): Agent {
  return new Agent({
    keepAlive: true,
    lookup: (hostname, options, callback) => {
      if (!/(^|\.)localhost$/i.test(hostname)) throw new Error(`not a localhost name: ${hostname}`);
      if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
      else callback(null, '127.0.0.1', 4);
    },
  });
}
