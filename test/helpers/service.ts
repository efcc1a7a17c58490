/**
 * A real Dirigo service for tests: HTTPS on port 0 with the test PKI, on SQLite (a temp file) or on
 * PostgreSQL (a schema of its own), with a registry of test users and groups.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { send, type HttpResponse, type SendOptions } from './http.ts';
import { loadConfig } from '../../src/app/config.ts';
import { createContext, type AppContext } from '../../src/app/context.ts';
import { startServer, type StartedServer } from '../../src/app/server.ts';
import { userDn } from '../../src/pki/dev-ca.ts';
import { POSTGRES_URL, createPostgresSchema, type TestDialect } from './dialects.ts';
import { testPki, TEST_USERS, type TestPki } from './pki.ts';
import { describeViolation, responseValidator, VIOLATION_HEADER } from './response-validator.ts';
import { motoBucket } from './s3-servers.ts';

export const TEST_SETUP = 'Dirigo-Test';

/** The registry every test service starts with; `extra` config is merged over the whole config. */
export function testRegistry() {
  return {
    users: TEST_USERS.map((name) => ({ name, dns: [userDn(name)], email: `${name}@test.example` })),
    groups: [
      { name: 'dirigo_user', members: ['alice', 'bob', 'carol'], properties: [] },
      { name: 'dirigo_prod', members: ['alice', 'carol'], properties: ['JobSharing'] },
      { name: 'dirigo_admin', members: ['admin'], properties: ['JobAdministrator', 'CatalogueAdministrator'] },
      { name: 'dirigo_monitor', members: ['carol'], properties: ['JobMonitor'] },
      { name: 'dirigo_pilot', members: ['pilot'], properties: ['Pilot'] },
    ],
    setups: [TEST_SETUP, 'Dirigo-Other'],
  };
}

export type { HttpResponse };

export interface RequestOptions extends SendOptions {
  /** Send a client certificate: a test user's name, or explicit PEMs. */
  as?: string | { cert: string; key: string };
  /**
   * A redirect to the sandbox store (a presigned GET, S3 store) is followed, as curl -L or a browser
   * would, so that suites read the same bytes whatever the store; false: the redirect itself.
   */
  followRedirects?: boolean;
}

/** The routes whose 302 leads to the sandbox store; others' redirects (OAuth callbacks) are answers to check. */
const SANDBOX_DOWNLOAD = /^\/(agents\/)?jobs\/\d+\/(input|output)sandbox\b/;

export interface TestService {
  url: string;
  ctx: AppContext;
  server: StartedServer;
  pki: TestPki;
  dataDir: string;
  dialect: TestDialect;
  /** PostgreSQL only: the schema this service's database lives in. */
  pgSchema?: string | undefined;
  request(path: string, options?: RequestOptions): Promise<HttpResponse>;
  /** A flow A token for `user` in `group`. */
  token(user: string, group?: string, setup?: string): Promise<string>;
  close(): Promise<void>;
}

export interface TestServiceOptions {
  dialect: TestDialect;
  /** Merged over the default test config (shallow per top-level key). */
  config?: Record<string, unknown>;
  logLevel?: string;
  logStream?: NodeJS.WritableStream;
  /** PostgreSQL only: connect through this URL instead of the default (e.g. a relay). */
  databaseUrl?: string;
  /** A second instance on the database of `sharing` (its own data dir, port and processes; its bucket with the S3 store). */
  sharing?: TestService;
  /**
   * `jobs.sandbox.store`: `s3` is a bucket of its own on the tests' moto_server (test/helpers/s3-servers.ts);
   * DIRIGO_TEST_SANDBOX_STORE sets the default (`npm run test:s3`). A `jobs.sandbox` in `config` is merged over it.
   */
  sandboxStore?: 'file' | 's3';
}

/** The test service's `jobs` section with the sandbox store asked for merged in. */
async function withSandboxStore(options: TestServiceOptions): Promise<Record<string, unknown> | undefined> {
  const jobs = options.config?.jobs as Record<string, unknown> | undefined;
  const kind = options.sandboxStore ?? (process.env.DIRIGO_TEST_SANDBOX_STORE === 's3' ? 's3' : 'file');
  if (kind !== 's3') return jobs;
  const sandbox = jobs?.sandbox as Record<string, unknown> | undefined;
  // A store named by the test's own config wins (tests of one store in particular).
  if (sandbox?.store !== undefined) return jobs;
  const shared = options.sharing?.ctx.config.jobs.sandbox;
  const s3 = shared?.store === 's3' ? shared.s3 : await motoBucket();
  return { ...jobs, sandbox: { ...sandbox, store: 's3', s3: { ...s3, ...(sandbox?.s3 as object) } } };
}

export async function startTestService(options: TestServiceOptions): Promise<TestService> {
  const pki = await testPki();
  const dataDir = mkdtempSync(join(tmpdir(), 'dirigo-test-'));
  const shared = options.sharing;
  const pgSchema = shared ? undefined : options.dialect === 'postgres' ? await createPostgresSchema() : undefined;
  const schemaName = shared?.pgSchema ?? pgSchema?.schema;
  const sqliteUrl = shared ? `sqlite:${join(shared.dataDir, 'dirigo.db')}` : 'sqlite:dirigo.db';
  const jobs = await withSandboxStore(options);
  const config = loadConfig({
    dataDir,
    env: {},
    object: {
      server: { host: '127.0.0.1', port: 0 },
      tls: { cert: pki.server.cert, key: pki.server.key, caDir: pki.trustedDir },
      database: { url: schemaName ? (options.databaseUrl ?? POSTGRES_URL) : sqliteUrl },
      registry: testRegistry(),
      logging: { level: options.logLevel ?? 'silent' },
      ...options.config,
      ...(jobs ? { jobs } : {}),
    },
  });
  const ctx = await createContext(config, schemaName ? { schema: schemaName, poolSize: 5 } : {});
  // Every answer is checked against the OpenAPI document; violations fail request() or close().
  const validator = responseValidator();
  const thrown = new Set<number>();
  const server = await startServer(ctx, { logStream: options.logStream, plugins: [validator.plugin] });
  const agents = new Map<string, Agent>();
  // The store's own URLs (moto_server speaks plain HTTP on 127.0.0.1).
  const plainHttp = new Agent();
  agents.set('plain-http', plainHttp);
  const agentFor = (as: RequestOptions['as']): Agent => {
    const key = typeof as === 'string' ? as : as ? as.cert : '';
    let agent = agents.get(key);
    if (!agent) {
      const identity = typeof as === 'string' ? { cert: pki.users[as]!.certPem, key: pki.users[as]!.keyPem } : as;
      agent = new Agent({ connect: { ca: pki.ca.certPem, ...(identity ?? {}) } });
      agents.set(key, agent);
    }
    return agent;
  };

  const service: TestService = {
    url: server.url,
    ctx,
    server,
    pki,
    dataDir,
    dialect: options.dialect,
    pgSchema: schemaName,
    async request(path, opts = {}) {
      const res = await send(server.url + path, opts, agentFor(opts.as));
      // An answer the OpenAPI document does not describe fails the test that received it (the answer rides along).
      const flagged = res.headers[VIOLATION_HEADER];
      if (flagged !== undefined) {
        const indexes = String(flagged).split(',').map(Number);
        for (const i of indexes) thrown.add(i);
        const problems = indexes.map((i) => describeViolation(validator.violations[i]!)).join('\n');
        throw Object.assign(new Error(`the answer breaks the OpenAPI document:\n${problems}\nbody: ${res.text.slice(0, 500)}`), { response: res });
      }
      const location = res.headers.location;
      if (opts.followRedirects !== false && res.status === 302 && SANDBOX_DOWNLOAD.test(path) && typeof location === 'string' && location.startsWith('http://')) {
        // The store's presigned GET: no credential but the URL (and not this service's TLS).
        return send(location, {}, plainHttp);
      }
      return res;
    },
    async token(user, group = 'dirigo_user', setup = TEST_SETUP) {
      const res = await service.request(`/oauth2/token?grant_type=client_credentials&group=${group}&setup=${setup}`, { as: user });
      if (res.status !== 200) throw new Error(`token for ${user}/${group}: ${res.status} ${res.text}`);
      return res.json.access_token as string;
    },
    async close() {
      await Promise.all([...agents.values()].map((a) => a.close()));
      await server.close();
      await pgSchema?.drop();
      rmSync(dataDir, { recursive: true, force: true });
      // Answers no request() saw (curl, browsers, inject): the whole suite fails, naming each request.
      const unseen = validator.violations.filter((_, i) => !thrown.has(i));
      if (unseen.length > 0) throw new Error(`answers the OpenAPI document does not describe:\n${unseen.map(describeViolation).join('\n')}`);
    },
  };
  return service;
}
