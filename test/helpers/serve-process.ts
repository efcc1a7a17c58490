/**
 * `dirigo serve` as a real child process, configured with the test PKI and registry: used by the crash
 * test and by the jobs benchmarks (which need the server on its own event loop, as in production).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { stringify } from 'yaml';
import { createPostgresSchema, POSTGRES_URL } from './dialects.ts';
import { testRegistry, TEST_SETUP } from './service.ts';
import { testPki, type TestPki } from './pki.ts';
import type { Dialect } from '../../src/kernel/db/dialect.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

export interface ServeSetup {
  pki: TestPki;
  dataDir: string;
  configFile: string;
  /** The database URL the server uses (PostgreSQL: with its own search_path). */
  databaseUrl: string;
  /** PostgreSQL only: the schema, and how to drop it. */
  schema?: string;
  dropSchema?: () => Promise<void>;
}

/** Writes a data dir and config for `dirigo serve`; `jobs` is the config's jobs section. */
export async function prepareServe(dialect: Dialect, jobs: Record<string, unknown>, serverExtra: Record<string, unknown> = {}): Promise<ServeSetup> {
  const pki = await testPki();
  const dataDir = mkdtempSync(join(tmpdir(), 'dirigo-serve-'));
  let databaseUrl = 'sqlite:dirigo.db';
  let schema: string | undefined;
  let dropSchema: (() => Promise<void>) | undefined;
  if (dialect === 'postgres') {
    const s = await createPostgresSchema();
    schema = s.schema;
    dropSchema = s.drop;
    databaseUrl = `${POSTGRES_URL}?options=${encodeURIComponent(`-c search_path=${s.schema}`)}`;
  }
  const configFile = join(dataDir, 'config.yaml');
  writeFileSync(
    configFile,
    stringify({
      server: { host: '127.0.0.1', port: 0, ...serverExtra },
      tls: { cert: pki.server.cert, key: pki.server.key, caDir: pki.trustedDir },
      database: { url: databaseUrl },
      registry: testRegistry(),
      logging: { level: 'silent' },
      jobs,
    }),
  );
  return { pki, dataDir, configFile, databaseUrl: dialect === 'sqlite' ? `sqlite:${join(dataDir, 'dirigo.db')}` : databaseUrl, ...(schema ? { schema } : {}), ...(dropSchema ? { dropSchema } : {}) };
}

/**
 * Node flags for a benched server, from the environment (every bench's server and peer takes them):
 * - `DIRIGO_BENCH_CPU_PROF=<dir>`: a V8 CPU profile written there when it stops (bench/profiles/,
 *   summarised by bench/lib/profile-top.ts); NODE_OPTIONS does not accept --cpu-prof;
 * - `DIRIGO_BENCH_NODE_FLAGS`: more flags, space-separated (bench/load/memory.ts: V8 sizing such as
 *   `--max-semi-space-size=16`, `--heapsnapshot-signal=SIGUSR2`). Allocator settings such as
 *   MALLOC_ARENA_MAX need nothing here: the server inherits the environment.
 */
export function benchNodeFlags(): string[] {
  const dir = process.env.DIRIGO_BENCH_CPU_PROF;
  const profile = dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
  return [...profile, ...(process.env.DIRIGO_BENCH_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? [])];
}

export async function startServe(setup: Pick<ServeSetup, 'configFile' | 'dataDir'>): Promise<ServeProcess> {
  const child = spawn(process.execPath, [...benchNodeFlags(), join(ROOT, 'bin/dirigo.js'), 'serve', '--config', setup.configFile, '--data-dir', setup.dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${out}\n${err}`)), 60000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /Dirigo serving (https:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void exited.then((code) => reject(new Error(`serve exited with ${code}:\n${out}\n${err}`)));
  });
  return { child, url, exited };
}

/** A keep-alive HTTPS agent presenting `user`'s certificate. */
export function userAgent(pki: TestPki, user: string, connections = 16): Agent {
  const u = pki.users[user]!;
  return new Agent({ connect: { ca: pki.ca.certPem, cert: u.certPem, key: u.keyPem }, connections, pipelining: 1 });
}

export async function flowAToken(url: string, agent: Agent, group = 'dirigo_user'): Promise<string> {
  const res = await request(`${url}/oauth2/token?grant_type=client_credentials&group=${group}&setup=${TEST_SETUP}`, { dispatcher: agent });
  const body = (await res.body.json()) as { access_token?: string };
  if (res.statusCode !== 200 || !body.access_token) throw new Error(`token: ${res.statusCode} ${JSON.stringify(body)}`);
  return body.access_token;
}

export async function stopServe(p: ServeProcess): Promise<void> {
  if (p.child.exitCode === null && p.child.signalCode === null) {
    p.child.kill('SIGTERM');
    await p.exited;
  }
}
