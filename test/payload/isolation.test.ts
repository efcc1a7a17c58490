/**
 * Local payloads run in a sandbox: on the embedded default — its data dir written by
 * the first start, inside the repository as `npm start` puts it, its config.yaml, development PKI and
 * database — a payload cannot read the administrator's key, the config, the database or another running
 * job's working directory, while an ordinary job still runs with its sandboxes, reports with `dirigo job
 * report` (the CA it is given lies in the hidden data dir) and is stopped whole by a kill.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { randomInt } from 'node:crypto';
import { Agent } from 'undici';
import { bootstrapDataDir, configPath } from '../../src/app/bootstrap.ts';
import { loadConfig } from '../../src/app/config.ts';
import { createContext } from '../../src/app/context.ts';
import { startServer, type StartedServer } from '../../src/app/server.ts';
import { createPostgresSchema, dialects, POSTGRES_URL, type TestDialect } from '../helpers/dialects.ts';
import { send, type HttpResponse, type SendOptions } from '../helpers/http.ts';
import { FINAL, multipart, untar } from '../jobs/helpers.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

/** Host processes whose command line contains `marker` (the payload's own pids are another namespace's). */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').includes(marker)) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Embedded {
  dataDir: string;
  server: StartedServer;
  agent: Agent;
  token: string;
  call(path: string, options?: SendOptions): Promise<HttpResponse>;
  submit(manifest: unknown): Promise<number>;
  waitFor(jid: number, statuses?: string[], timeoutMs?: number): Promise<Record<string, unknown>>;
  output(jid: number): Promise<Map<string, Buffer>>;
  close(): Promise<void>;
}

/**
 * The embedded default as the first `npm start` writes it: ./dirigo-data in the clone (here under
 * test-artifacts/, which git ignores), with `jobs` (YAML) appended: a faster scheduler and four slots.
 */
async function startEmbedded(dialect: TestDialect, jobs: string, logStream?: NodeJS.WritableStream): Promise<Embedded> {
  mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
  const dataDir = mkdtempSync(join(ROOT, 'test-artifacts', 'isolation-'));
  await bootstrapDataDir(dataDir);
  appendFileSync(configPath(dataDir), `jobs:\n${jobs}`);
  const pg = dialect === 'postgres' ? await createPostgresSchema() : undefined;
  const config = loadConfig({ dataDir, file: configPath(dataDir), env: {}, overrides: { port: 0, logLevel: logStream ? 'warn' : 'silent', ...(pg ? { databaseUrl: POSTGRES_URL } : {}) } });
  const ctx = await createContext(config, pg ? { schema: pg.schema, poolSize: 5 } : {});
  const server = await startServer(ctx, logStream ? { logStream } : {});
  const pki = join(dataDir, 'pki');
  const agent = new Agent({ connect: { ca: readFileSync(join(pki, 'ca.crt')), cert: readFileSync(join(pki, 'users/alice.crt')), key: readFileSync(join(pki, 'users/alice.key')) } });
  const res = await send(`${server.url}/oauth2/token?grant_type=client_credentials&group=dirigo_user&setup=Dirigo-Local`, {}, agent);
  assert.equal(res.status, 200, res.text);
  const token = res.json.access_token as string;
  const call = (path: string, options: SendOptions = {}): Promise<HttpResponse> => send(server.url + path, { token, ...options }, agent);
  return {
    dataDir,
    server,
    agent,
    token,
    call,
    async submit(manifest) {
      const res = await call('/jobs', { method: 'POST', json: manifest });
      assert.equal(res.status, 201, res.text);
      return res.json.jids[0] as number;
    },
    async waitFor(jid, statuses = FINAL, timeoutMs = 120_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const res = await call(`/jobs/${jid}`);
        assert.equal(res.status, 200, res.text);
        if (statuses.includes(res.json.Status)) return res.json;
        if (Date.now() > end) assert.fail(`job ${jid} is still ${res.json.Status} (${res.json.MinorStatus}) after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async output(jid) {
      const res = await call(`/jobs/${jid}/outputsandbox`);
      assert.equal(res.status, 200, res.text);
      return untar(res.body);
    },
    async close() {
      await server.close();
      await agent.close();
      await pg?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

for (const { dialect, skip } of await dialects()) {
  describe(`local payloads run in a sandbox that hides the service's files (${dialect})`, { skip }, () => {
    let svc: Embedded;
    let dataDir: string;

    const call = (path: string, options?: SendOptions) => svc.call(path, options);
    const submit = (manifest: unknown) => svc.submit(manifest);
    const waitFor = (jid: number, statuses?: string[]) => svc.waitFor(jid, statuses);
    const output = (jid: number) => svc.output(jid);

    before(async () => {
      svc = await startEmbedded(dialect, '  scheduler: { pollIntervalMs: 100 }\n  sites: [{ name: Local, type: local, slots: 4 }]\n');
      dataDir = svc.dataDir;
    });
    after(() => svc?.close());

    it("cannot read the admin key, config.yaml, the database or another running job's working directory", async () => {
      const victim = await submit({ Executable: '/bin/sh', Arguments: `-c 'echo victim-secret > secret.txt; exec sleep 600'` });
      await waitFor(victim, ['Running']);
      await until('the victim wrote its file', () => existsSync(join(dataDir, 'work', String(victim), 'secret.txt')));

      const targets = [
        '../../pki/users/admin.key',
        '$D/pki/users/admin.key',
        '$D/pki/server.key',
        '$D/config.yaml',
        '$D/demo-credentials.json',
        ...(dialect === 'sqlite' ? ['$D/dirigo.db'] : []),
        '$D/work/$V/secret.txt',
        '../$V/secret.txt',
      ];
      // Also through another process's view of the file system: /proc/<pid>/root of the server, if it showed.
      const script = [
        ...targets.map((t) => `if cat "${t}" > /dev/null; then echo "READ ${t}"; else echo "DENIED ${t}"; fi`),
        'for f in /proc/[0-9]*/root"$D"/config.yaml; do cat "$f" > /dev/null 2>&1 && echo "READ $f"; done',
        'cat "$DIRIGO_CA" > /dev/null && echo "CA readable"',
        // The local PostgreSQL's socket (peer authentication as the server's user) is covered too.
        'if [ -S /run/postgresql/.s.PGSQL.5432 ]; then echo "SOCKET visible"; else echo "no socket"; fi',
        'exit 0',
      ].join('\n');
      const thief = await submit({ Executable: '/bin/sh', Arguments: `-c '${script}'`, Environment: { D: dataDir, V: String(victim) } });
      const job = await waitFor(thief);
      assert.equal(job.Status, 'Done', String(job.MinorStatus));
      const files = await output(thief);
      const out = files.get('std.out')!.toString();
      assert.deepEqual(
        out.split('\n').filter((l) => l.startsWith('READ') || l.startsWith('DENIED')),
        targets.map((t) => `DENIED ${t.replace('$D', dataDir).replace('$V', String(victim))}`),
        `the payload read what it must not:\n${out}`,
      );
      assert.match(out, /CA readable/, 'the CA it is given stays readable');
      assert.match(out, /no socket/, 'the database socket is out of sight');
      // What the payload saw: the files are simply not there.
      assert.match(files.get('std.err')!.toString(), /admin\.key: No such file or directory/);

      assert.equal((await call(`/jobs/${victim}`, { method: 'DELETE' })).status, 200);
      await waitFor(victim, ['Killed']);
    });

    it('an ordinary job still runs to Done with its sandboxes, and reports with dirigo job report', async () => {
      // `dirigo` is found by name: its script lies in the hidden workDir, shown read-only.
      const hello = '#!/bin/sh\necho "Hello from job $DIRIGO_JOB_ID, $1"\nwc -l < data.txt > lines.txt\ndirigo job report --status sandboxed --param where=inside > report.txt\n(: > "$(command -v dirigo)") 2>/dev/null && echo writable > cli.txt || echo read-only > cli.txt\n';
      const manifest = { Executable: 'hello.sh', Arguments: `'dear user'`, OutputSandbox: ['lines.txt', 'report.txt', 'cli.txt'] };
      const { body, headers } = await multipart([
        { name: 'manifest', value: JSON.stringify(manifest) },
        { name: 'file', value: hello, filename: 'hello.sh' },
        { name: 'file', value: 'one\ntwo\nthree\n', filename: 'data.txt' },
      ]);
      const res = await call('/jobs', { method: 'POST', body, headers });
      assert.equal(res.status, 201, res.text);
      const jid = res.json.jids[0] as number;
      const job = await waitFor(jid);
      const files = await output(jid);
      assert.equal(job.Status, 'Done', `${String(job.MinorStatus)}\n${files.get('std.err')}`);
      assert.equal(files.get('std.out')?.toString(), `Hello from job ${jid}, dear user\n`);
      assert.equal(files.get('lines.txt')?.toString().trim(), '3');
      assert.equal(files.get('report.txt')?.toString(), `job ${jid}: Running\n`);
      assert.deepEqual(job.Parameters, { where: 'inside' });
      assert.equal(files.get('cli.txt')?.toString(), 'read-only\n', 'the payload cannot change the dirigo command');
    });

    it('a kill stops the sandboxed payload and every process it started, even one that left its group', async () => {
      const marker = `${4000 + randomInt(1000)}.${randomInt(1000)}`;
      const jid = await submit({ Executable: '/bin/sh', Arguments: `-c 'sleep ${marker} & setsid sleep ${marker} & sleep ${marker}'` });
      await waitFor(jid, ['Running']);
      await until('three sleeps run', () => processesWith(marker).length >= 3);
      assert.equal((await call(`/jobs/${jid}`, { method: 'DELETE' })).status, 200);
      const job = await waitFor(jid, ['Killed']);
      assert.equal(job.Status, 'Killed');
      await until('every process of the payload is gone', () => processesWith(marker).length === 0, 30_000).catch(() => {
        assert.fail(`still running after the kill: ${processesWith(marker).join(', ')}`);
      });
    });
  });
}

for (const { dialect, skip } of await dialects()) {
  describe(`a local site whose sandbox cannot work takes no jobs, and says why (${dialect})`, { skip }, () => {
    const path = process.env.PATH;
    let empty: string;
    before(() => {
      // A server whose PATH has no bwrap: as on a host without the bubblewrap package.
      empty = mkdtempSync(join(tmpdir(), 'no-bwrap-'));
      process.env.PATH = empty;
    });
    after(() => {
      process.env.PATH = path;
      rmSync(empty, { recursive: true, force: true });
    });

    it('readiness and the log name bwrap and the fix; its jobs wait; a site set to isolation: none runs them', async () => {
      const log: string[] = [];
      const stream = new Writable({ write: (chunk: Buffer, _enc, done) => (log.push(chunk.toString()), done()) });
      const svc = await startEmbedded(dialect, '  scheduler: { pollIntervalMs: 100 }\n  sites: [{ name: Local, type: local, slots: 4 }, { name: Open, type: local, slots: 1, workDir: open, isolation: none }]\n', stream);
      try {
        const ready = await until('readiness reports the sandbox', async () => {
          const res = await svc.call('/readyz', { token: '' });
          return res.status === 503 && res;
        });
        assert.match(ready.json.checks.payloadSandbox.reason, /site Local: payloads cannot be sandboxed: bwrap is not installed .*install bubblewrap .*isolation: none/);
        // Each site in its own words: the broken one not ready, saying why; the unsandboxed one ready.
        assert.equal(ready.json.sites.Local.state, 'not_ready');
        assert.match(ready.json.sites.Local.reason, /^payloads cannot be sandboxed: bwrap is not installed/);
        assert.deepEqual(ready.json.sites.Open, { type: 'local', state: 'ready' });
        assert.ok(
          log.some((l) => /site Local takes no jobs: payloads cannot be sandboxed.*apt-get install bubblewrap/.test(l)),
          `the log says how to fix it:\n${log.join('')}`,
        );
        const held = await svc.submit({ Executable: '/bin/true', Sites: ['Local'] });
        const open = await svc.submit({ Executable: '/bin/true', Sites: ['Open'] });
        assert.equal((await svc.waitFor(open)).Status, 'Done', 'isolation: none runs without bwrap');
        const job = await svc.waitFor(held, ['Waiting', ...FINAL]);
        assert.equal(job.Status, 'Waiting', 'the sandboxed site started nothing');
      } finally {
        await svc.close();
      }
    });
  });
}
