/**
 * Several `dirigo serve` processes on one PostgreSQL schema and one shared sandbox directory, as in a
 * scaled-out deployment behind a load balancer. Each instance has its own data dir (working directories)
 * and config file; the database, the sandbox store, the TLS identity and the registry are shared.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Agent } from 'undici';
import { stringify } from 'yaml';
import { createPostgresSchema, POSTGRES_URL } from './dialects.ts';
import { testPki, type TestPki } from './pki.ts';
import { send, type HttpResponse } from './http.ts';
import { testRegistry, TEST_SETUP } from './service.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

export interface Instance {
  name: string;
  url: string;
  child: ChildProcess;
  exited: Promise<number | null>;
  dataDir: string;
}

export interface Cluster {
  pki: TestPki;
  /** Shared folder: the sandbox store and anything the jobs write for the test to read. */
  shared: string;
  schema: string;
  start(name: string): Promise<Instance>;
  request(instance: Instance, path: string, options?: { method?: 'GET' | 'POST' | 'PUT' | 'DELETE'; token?: string; json?: unknown; as?: string }): Promise<HttpResponse>;
  token(instance: Instance, user: string, group?: string): Promise<string>;
  /** A query on the shared schema. */
  sql<T extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export async function startCluster(jobs: Record<string, unknown>): Promise<Cluster> {
  const pki = await testPki();
  const root = mkdtempSync(join(tmpdir(), 'dirigo-cluster-'));
  const shared = join(root, 'shared');
  mkdirSync(shared);
  const { schema, drop } = await createPostgresSchema();
  const databaseUrl = `${POSTGRES_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const instances: Instance[] = [];
  const agents = new Map<string, Agent>();
  const db = new pg.Pool({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}`, max: 2 });

  const cluster: Cluster = {
    pki,
    shared,
    schema,
    async start(name) {
      const dataDir = join(root, name);
      mkdirSync(dataDir, { recursive: true });
      const configFile = join(dataDir, 'config.yaml');
      writeFileSync(
        configFile,
        stringify({
          server: { host: '127.0.0.1', port: 0 },
          // Behind a load balancer every instance issues tokens under one name (the balancer's URL).
          tokens: { issuer: 'https://dirigo-cluster.test' },
          tls: { cert: pki.server.cert, key: pki.server.key, caDir: pki.trustedDir },
          database: { url: databaseUrl },
          registry: testRegistry(),
          logging: { level: 'warn' },
          jobs: { ...jobs, sandbox: { dir: join(shared, 'sandboxes') } },
        }),
      );
      const child = spawn(process.execPath, [join(ROOT, 'bin/dirigo.js'), 'serve', '--config', configFile, '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      let out = '';
      let err = '';
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name} did not start:\n${out}\n${err}`)), 180000);
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /Dirigo serving (https:\/\/\S+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
        void exited.then((code) => reject(new Error(`${name} exited with ${code}:\n${out}\n${err}`)));
      });
      child.stdout!.resume();
      const instance = { name, url, child, exited, dataDir };
      instances.push(instance);
      return instance;
    },
    async request(instance, path, options = {}) {
      const key = options.as ?? '';
      let agent = agents.get(key);
      if (!agent) {
        const identity = options.as ? { cert: pki.users[options.as]!.certPem, key: pki.users[options.as]!.keyPem } : {};
        agent = new Agent({ connect: { ca: pki.ca.certPem, ...identity } });
        agents.set(key, agent);
      }
      return send(instance.url + path, options, agent);
    },
    async token(instance, user, group = 'dirigo_user') {
      const res = await cluster.request(instance, `/oauth2/token?grant_type=client_credentials&group=${group}&setup=${TEST_SETUP}`, { as: user });
      if (res.status !== 200) throw new Error(`token for ${user}: ${res.status} ${res.text}`);
      return res.json.access_token as string;
    },
    async sql(text, values) {
      return (await db.query(text, values)).rows;
    },
    async close() {
      for (const i of instances) {
        if (i.child.exitCode === null && i.child.signalCode === null) i.child.kill('SIGTERM');
        await i.exited;
      }
      await Promise.all([...agents.values()].map((a) => a.close()));
      await db.end();
      await drop();
      rmSync(root, { recursive: true, force: true });
    },
  };
  return cluster;
}
