/**
 * slurmrestd with auth/jwt as the peer of Dirigo's job submission and listing: a private slurmctld built
 * from the single-node configuration that scripts/slurm-dev.sh writes (/etc/slurm/slurm.conf), with its
 * own cluster name, ports, state and log directories, and auth/jwt added as an alternative
 * authentication type. A private controller, not the shared one: adding auth/jwt takes a restart of
 * slurmctld, which would cut off whoever else is using the development cluster, and the state it keeps
 * (the benched jobs) goes away with it. No slurmd serves it, so the submitted jobs stay pending, as
 * Dirigo's do with its scheduler off: only acceptance is measured.
 *
 * Needs root (slurmctld runs as SlurmUser=root there), Debian's slurmctld, slurmrestd and
 * slurm-wlm-jwt-plugin. Returns the reason instead when something is missing.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';

export interface SlurmPeer {
  /** http://127.0.0.1:<port> of slurmrestd. */
  url: string;
  /** e.g. /slurm/v0.0.38/job/submit */
  submitPath: string;
  headers: Record<string, string>;
  /** The JSON body of a one-line batch job. */
  jobBody: string;
  /** slurmrestd's and slurmctld's pids: the server side of a submission. */
  pids(): number[];
  slurmctldPid(): number;
  /** Runs `squeue` (the full listing, every job) against this controller; returns the jobs listed. */
  squeue(): { jobs: number; ms: number };
  stop(): Promise<void>;
}

const CONF = '/etc/slurm/slurm.conf';
const JWT_PLUGIN = '/usr/lib/x86_64-linux-gnu/slurm-wlm/auth_jwt.so';
const USER = 'nobody';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** The OpenAPI plugin of this slurmrestd's release: 22.05 serves v0.0.38, each later release one more. */
function apiVersion(): string | undefined {
  const v = /slurm\S* (\d+)\.(\d+)/.exec(spawnSync('slurmrestd', ['-V'], { encoding: 'utf8' }).stdout ?? '');
  if (!v) return undefined;
  const release = `${v[1]}.${v[2]}`;
  return ({ '22.05': 'v0.0.38', '23.02': 'v0.0.39', '23.11': 'v0.0.40', '24.05': 'v0.0.41', '24.11': 'v0.0.42', '25.05': 'v0.0.43' } as Record<string, string>)[release];
}

export async function startSlurmPeer(): Promise<SlurmPeer | { skipped: string }> {
  if (process.getuid?.() !== 0) return { skipped: 'not root (the private slurmctld runs as SlurmUser=root)' };
  if (!existsSync('/usr/sbin/slurmrestd')) return { skipped: 'slurmrestd is not installed (Debian package slurmrestd)' };
  if (!existsSync(JWT_PLUGIN)) return { skipped: 'auth/jwt is not installed (Debian package slurm-wlm-jwt-plugin)' };
  if (!existsSync('/usr/sbin/slurmctld')) return { skipped: 'slurmctld is not installed (scripts/slurm-dev.sh installs it)' };
  if (!existsSync(CONF)) return { skipped: `${CONF} is missing: run scripts/slurm-dev.sh first` };
  const version = apiVersion();
  if (!version) return { skipped: 'unknown slurmrestd release (no OpenAPI version known for it)' };

  const dir = mkdtempSync(join(tmpdir(), 'dirigo-slurm-peer-'));
  chmodSync(dir, 0o755); // slurmrestd drops to nobody; the configuration must stay readable
  mkdirSync(join(dir, 'ctld'));
  mkdirSync(join(dir, 'd'));
  const key = join(dir, 'jwt.key');
  writeFileSync(key, randomBytes(32), { mode: 0o600 });
  const [ctldPort, slurmdPort, restPort] = [await freePort(), await freePort(), await freePort()];
  const replace: Record<string, string> = {
    ClusterName: 'dirigopeer',
    SlurmctldPort: String(ctldPort),
    SlurmdPort: String(slurmdPort),
    StateSaveLocation: join(dir, 'ctld'),
    SlurmdSpoolDir: join(dir, 'd'),
    SlurmctldPidFile: join(dir, 'slurmctld.pid'),
    SlurmdPidFile: join(dir, 'slurmd.pid'),
    SlurmctldLogFile: join(dir, 'slurmctld.log'),
    SlurmdLogFile: join(dir, 'slurmd.log'),
    // Every benched job stays queued (no slurmd runs them); --full submits more than the shared cluster's limit.
    MaxJobCount: '1000000',
  };
  const conf =
    readFileSync(CONF, 'utf8')
      .split('\n')
      .map((line) => {
        const k = /^(\w+)=/.exec(line)?.[1];
        return k && k in replace ? `${k}=${replace[k]}` : line;
      })
      .join('\n') + `\nAuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key=${key}\n`;
  const confFile = join(dir, 'slurm.conf');
  writeFileSync(confFile, conf, { mode: 0o644 });
  const env = { ...process.env, SLURM_CONF: confFile };

  const started: { rest?: ChildProcess } = {};
  const ctldPid = () => Number(readFileSync(join(dir, 'slurmctld.pid'), 'utf8').trim());
  const stop = async () => {
    const r = started.rest;
    if (r && r.exitCode === null) {
      await new Promise<void>((resolve) => {
        r.once('exit', () => resolve());
        r.kill('SIGTERM');
      });
    }
    if (existsSync(join(dir, 'slurmctld.pid'))) {
      const pid = ctldPid();
      try {
        process.kill(pid, 'SIGTERM');
        for (let i = 0; i < 100 && existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 100));
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const fail = async (why: string) => {
    const log = existsSync(replace.SlurmctldLogFile!) ? readFileSync(replace.SlurmctldLogFile!, 'utf8').trim().split('\n').slice(-3).join(' / ') : '';
    await stop();
    return { skipped: `${why}${log ? ` (slurmctld log: ${log})` : ''}` };
  };

  const ctld = spawnSync('/usr/sbin/slurmctld', ['-f', confFile], { env, encoding: 'utf8' });
  if (ctld.status !== 0) return fail(`slurmctld did not start: ${ctld.stderr.trim()}`);
  let up = false;
  for (let i = 0; i < 50 && !up; i++) {
    up = /is UP/.test(spawnSync('scontrol', ['ping'], { env, encoding: 'utf8' }).stdout ?? '');
    if (!up) await new Promise((r) => setTimeout(r, 200));
  }
  if (!up) return fail('the private slurmctld does not answer scontrol ping');
  const token = /SLURM_JWT=(\S+)/.exec(spawnSync('scontrol', ['token', `username=${USER}`, 'lifespan=86400'], { env, encoding: 'utf8' }).stdout ?? '')?.[1];
  if (!token) return fail('scontrol token gave no token');

  const rest = spawn('/usr/sbin/slurmrestd', ['-f', confFile, '-a', 'rest_auth/jwt', '-s', `openapi/${version}`, '-u', USER, '-g', 'nogroup', `127.0.0.1:${restPort}`], {
    env: { ...env, SLURM_JWT: 'daemon' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  started.rest = rest;
  let restErr = '';
  rest.stderr!.on('data', (d: Buffer) => (restErr += d.toString()));
  const url = `http://127.0.0.1:${restPort}`;
  const headers = { 'x-slurm-user-name': USER, 'x-slurm-user-token': token, 'content-type': 'application/json' };
  let ready = false;
  for (let i = 0; i < 50 && !ready && rest.exitCode === null; i++) {
    try {
      const res = await request(`${url}/slurm/${version}/ping`, { headers });
      await res.body.dump();
      ready = res.statusCode === 200;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  if (!ready) return fail(`slurmrestd does not answer: ${restErr.trim().split('\n').slice(-2).join(' / ')}`);

  const environment = version === 'v0.0.38' ? { PATH: '/bin:/usr/bin' } : ['PATH=/bin:/usr/bin'];
  return {
    url,
    submitPath: `/slurm/${version}/job/submit`,
    headers,
    jobBody: JSON.stringify({ script: '#!/bin/sh\ntrue\n', job: { name: 'bench', current_working_directory: '/tmp', environment } }),
    pids: () => [rest.pid!, ctldPid()],
    slurmctldPid: ctldPid,
    squeue() {
      const t0 = performance.now();
      const out = spawnSync('squeue', [], { env, encoding: 'utf8', maxBuffer: 1 << 30 });
      const ms = performance.now() - t0;
      if (out.status !== 0) throw new Error(`squeue: ${out.stderr}`);
      return { jobs: out.stdout.trim().split('\n').length - 1, ms };
    },
    stop,
  };
}
