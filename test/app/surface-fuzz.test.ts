/**
 * Generators for the surfaces added after the first hostile-input suite: JDL and parametric
 * submissions, search bodies and cursors, summaries, event streams resumed with Last-Event-ID, job-token
 * reports and dynamic-registration metadata. Each answer must be a 2xx or a JSON 4xx, nothing may be logged
 * as an error, and the service must still answer /healthz after every case.
 * Bounded here (DIRIGO_FUZZ_RUNS shared by the surfaces, fixed seed); `npm run fuzz` runs thousands, and a
 * failure prints the seed to replay it (DIRIGO_FUZZ_SEED).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { Agent, request } from 'undici';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const RUNS = Number(process.env.DIRIGO_FUZZ_RUNS ?? 400);
const SEED = process.env.DIRIGO_FUZZ_SEED === undefined ? 303030 : Number(process.env.DIRIGO_FUZZ_SEED);
/** Each of the eight surfaces gets its share (25 cases each in npm test), at least a handful. */
const PER_SURFACE = Math.max(6, Math.ceil(RUNS / 16));

const ATTRIBUTES = ['JobID', 'Status', 'MinorStatus', 'ApplicationStatus', 'Owner', 'OwnerGroup', 'Site', 'JobName', 'JobGroup', 'JobType', 'Priority', 'UserPriority', 'ExitCode', 'SubmissionTime', 'LastUpdateTime', 'RescheduleCounter', 'Setup', 'NumberOfProcessors', 'MaxRAM', 'CPUTime', 'TaskQueueID', 'Tags', 'NotAnAttribute'];
const OPERATORS = ['eq', 'neq', 'in', 'not in', 'lt', 'le', 'gt', 'ge', 'like', 'regex', ''];

const text = fc.oneof(
  fc.constantFrom('', ' ', '%n', '%s', '%j', '%(B)s', '%(', '%%', '\\', 'a\\', '%_\\', '\u0000', '\ud800', '../../pki/users/admin.key', 'Done', 'alice', "'; drop table jobs; --", '9'.repeat(40)),
  fc.string({ maxLength: 24 }),
  fc.integer({ min: 1, max: 6 }).map((n) => '%n'.repeat(n * 1000)),
  fc.integer({ min: 1, max: 4 }).map((n) => 'x'.repeat(n * 30000)),
);

const number = fc.oneof(
  fc.constantFrom(0, -1, 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1e300, -1e300, 0.5, 1e-300),
  fc.integer({ min: -5, max: 12 }),
);

const scalar = fc.oneof(text, number, fc.constantFrom(true, false, null));

/**
 * A JSON value whose depth is drawn from shallow to far deeper than any schema allows: a marker that
 * `json()` writes out as nested arrays (fast-check itself overflows its stack on such values).
 */
const DEEP = 'deep-json-marker:';
const deep = fc.integer({ min: 1, max: 6000 }).map((depth) => `${DEEP}${depth}`);
/** JSON.stringify, with each deep marker written as that many nested arrays. */
function json(value: unknown): string {
  return JSON.stringify(value).replace(new RegExp(`"${DEEP}(\\d+)"`, 'g'), (_, d: string) => '['.repeat(Number(d)) + ']'.repeat(Number(d)));
}

/** Parameters: small sets mostly, sometimes the counts and sizes an attacker would pick. */
const parameters = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 4 }), weight: 4 },
  { arbitrary: fc.array(fc.oneof(text, number), { minLength: 1, maxLength: 4 }), weight: 3 },
  { arbitrary: fc.constantFrom(0, -3, 0.5, 1e9, 100000, 10000), weight: 2 },
  { arbitrary: fc.constantFrom([], [[]], [{}], 'many', null), weight: 1 },
);

const manifest = fc
  .record(
    {
      Executable: fc.oneof(fc.constant('/bin/true'), text),
      Arguments: fc.oneof(text, fc.array(text, { maxLength: 3 })),
      JobName: text,
      JobGroup: text,
      JobType: text,
      Priority: number,
      CPUTime: number,
      Sites: fc.oneof(fc.array(text, { maxLength: 3 }), text),
      OutputSandbox: fc.oneof(fc.array(text, { maxLength: 3 }), text),
      Environment: fc.dictionary(text, text, { maxKeys: 3 }),
      Parameters: parameters,
      ParameterStart: number,
      ParameterStep: number,
      ParameterFactor: number,
      'Parameters.B': fc.oneof(parameters, fc.array(text, { maxLength: 3 })),
      Extra: fc.oneof(scalar, deep),
    },
    { requiredKeys: [] },
  )
  // Without a Parameters count an accepted manifest is one job; with one, keep accepted sets small so that
  // the cases stay cheap: a big count only travels with a template that must be refused (no Executable).
  .map((m) => {
    const count = typeof m.Parameters === 'number' ? m.Parameters : 1;
    if (count > 16 && Number.isInteger(count)) delete (m as Record<string, unknown>).Executable;
    return m;
  });

/** JDL: attribute = literal statements, some broken, with DIRAC's names and lists. */
const jdlValue = fc.oneof(
  text.map((s) => JSON.stringify(s)),
  number.map(String),
  fc.array(text.map((s) => JSON.stringify(s)), { maxLength: 4 }).map((xs) => `{${xs.join(', ')}}`),
  fc.constantFrom('{', '}', '"unterminated', '[ a = 1; ]', 'other.Attr', '1 + 2', 'true', '{{{{', '"\\', '/*', '//'),
);
const jdlName = fc.constantFrom('Executable', 'Arguments', 'JobName', 'Parameters', 'ParameterStart', 'ParameterStep', 'ParameterFactor', 'Parameters.B', 'InputSandbox', 'OutputSandbox', 'Site', 'CPUTime', 'Priority', 'ExecutionEnvironment', 'Requirements', 'JobType', 'Weird', '1bad', '');
const jdl = fc
  .tuple(fc.array(fc.tuple(jdlName, jdlValue), { maxLength: 8 }), fc.boolean(), fc.constantFrom('', '[', ']', ';', '# c\n', '/* c */'))
  .map(([stmts, executable, junk]) => {
    const body = stmts.map(([k, v]) => `  ${k} = ${v};`).join('\n');
    // A parametric JDL with a big count carries no Executable, as above.
    const big = stmts.some(([k, v]) => k === 'Parameters' && /^\d{3,}$/.test(v));
    return `[\n${executable && !big ? '  Executable = "/bin/true";\n' : ''}${body}\n]${junk}`;
  });

const cursor = fc.oneof(
  fc.constantFrom('["abc"]', '[1e300]', '[1.5]', '[]', '[null]', '[1,2,3,4,5,6,7,8]', '{"a":1}', 'null', '"', '[' + '['.repeat(3000), 'W10', '%00'),
  fc.array(scalar, { maxLength: 4 }).map((xs) => JSON.stringify(xs)),
  fc.array(scalar, { maxLength: 4 }).map((xs) => Buffer.from(JSON.stringify(xs)).toString('base64url')),
  text,
);

const condition = fc.record(
  {
    parameter: fc.constantFrom(...ATTRIBUTES),
    operator: fc.constantFrom(...OPERATORS),
    value: scalar,
    values: fc.oneof(fc.array(scalar, { maxLength: 5 }), fc.constant(Array.from({ length: 1001 }, (_, i) => i))),
  },
  { requiredKeys: ['parameter', 'operator'] },
);

const searchBody = fc.record(
  {
    search: fc.oneof(fc.array(condition, { maxLength: 4 }), fc.constant(Array.from({ length: 40 }, () => ({ parameter: 'Status', operator: 'eq', value: 'Done' })))),
    parameters: fc.oneof(
      fc.array(fc.constantFrom(...ATTRIBUTES), { maxLength: 6 }),
      fc.integer({ min: 100, max: 50000 }).map((n) => Array.from({ length: n }, () => 'Status')),
    ),
    sort: fc.array(fc.record({ parameter: fc.constantFrom(...ATTRIBUTES), direction: fc.constantFrom('asc', 'desc', 'up') }, { requiredKeys: ['parameter'] }), { maxLength: 5 }),
    page: fc.record({ size: number, offset: number, cursor }, { requiredKeys: [] }),
    allOwners: fc.oneof(fc.boolean(), text),
  },
  { requiredKeys: [] },
);

const queryValue = fc.oneof(text, number.map(String), fc.constantFrom('2147483648', '-2147483649', '99999999999999999999', 'Done', 'Waiting', 'alice'));
const summaryQuery = fc
  .tuple(fc.array(fc.constantFrom(...ATTRIBUTES), { minLength: 0, maxLength: 6 }), fc.array(fc.tuple(fc.constantFrom(...ATTRIBUTES, 'allOwners'), queryValue), { maxLength: 3 }))
  .map(([groupBy, restrictions]) => [...groupBy.map((g) => ['groupBy', g] as [string, string]), ...restrictions]);

const eventId = fc.oneof(fc.constantFrom('0.0', '0.1', '1.0', '99999999999999999999.0', '1.99999999999999999999', '-1.0', '1', '', 'a.b', '1.0.0', ' 1.0'), fc.tuple(fc.nat(), fc.nat()).map(([a, b]) => `${a}.${b}`), text);

const reportBody = fc.record(
  {
    ApplicationStatus: fc.oneof(text, number),
    Parameters: fc.oneof(
      fc.dictionary(fc.oneof(fc.constantFrom('events', 'a.b:c-d', 'x'.repeat(129), 'bad name', '__proto__', 'constructor'), text), fc.oneof(text, number), { maxKeys: 4 }),
      fc.integer({ min: 1, max: 120 }).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, 'v'.repeat(4096)]))),
    ),
    Extra: scalar,
  },
  { requiredKeys: [] },
);

const uri = fc.oneof(fc.constantFrom('https://rp.example/cb', 'http://127.0.0.1/cb', 'http://localhost:8080/', 'javascript:alert(1)', 'https://rp.example/cb#frag', 'data:text/html,x', 'custom.scheme:/cb', '//evil.example', 'https://'), text);
const registration = fc.record(
  {
    redirect_uris: fc.oneof(fc.array(uri, { maxLength: 3 }), uri),
    post_logout_redirect_uris: fc.array(uri, { maxLength: 2 }),
    grant_types: fc.array(fc.constantFrom('authorization_code', 'refresh_token', 'client_credentials', 'implicit', 'password', 'urn:ietf:params:oauth:grant-type:device_code', 'urn:ietf:params:oauth:grant-type:token-exchange', ''), { maxLength: 4 }),
    response_types: fc.array(fc.constantFrom('code', 'token', 'id_token', 'code id_token', ''), { maxLength: 3 }),
    token_endpoint_auth_method: fc.constantFrom('none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt', 'tls_client_auth', ''),
    scope: fc.oneof(fc.constantFrom('openid', 'openid profile compute.create', 'wlcg.groups:/dirigo_admin', 'storage.modify:/', 'offline_access'), text),
    client_name: text,
    client_id: fc.constantFrom('alice', 'admin', 'dirigo-web', 'x'),
    contacts: fc.array(text, { maxLength: 3 }),
    extra: fc.oneof(scalar, deep),
  },
  { requiredKeys: [] },
);

for (const { dialect, skip } of await dialects()) {
  describe(`hostile input on the newer surfaces (${dialect})`, { skip }, () => {
    let svc: TestService;
    let dispatcher: Agent;
    let tokens: Record<'alice' | 'bob' | 'admin' | 'pilot', string>;
    /** Jobs matched by an agent, so that their job tokens are honoured. */
    let running: { jid: number; token: string }[];
    const logged: string[] = [];
    before(async () => {
      const logStream = new PassThrough();
      logStream.on('data', (d: Buffer) => {
        for (const line of d.toString().split('\n')) if (/"level":(50|60)/.test(line)) logged.push(line);
      });
      svc = await startTestService({
        dialect,
        logLevel: 'info',
        logStream,
        config: {
          jobs: { scheduler: { pollIntervalMs: 200 }, sites: [{ name: 'Pool', type: 'agents', heartbeatIntervalMs: 60000 }] },
          oauth: { registration: { enabled: true } },
        },
      });
      dispatcher = new Agent({ connect: { ca: svc.pki.ca.certPem } });
      tokens = { alice: await svc.token('alice'), bob: await svc.token('bob'), admin: await svc.token('admin', 'dirigo_admin'), pilot: await svc.token('pilot', 'dirigo_pilot') };
      const submitted = await svc.request('/jobs', { method: 'POST', token: tokens.alice, json: Array.from({ length: 6 }, (_, i) => ({ Executable: '/bin/true', JobName: `f${i}`, JobGroup: 'fuzz' })) });
      assert.equal(submitted.status, 201, submitted.text);
      const matched = await svc.request('/agents/match', { method: 'POST', token: tokens.pilot, json: { agentId: 'fuzz-agent', site: 'Pool', slots: 3 } });
      assert.equal(matched.status, 200, matched.text);
      running = (matched.json.jobs as { JobID: number; JobToken: string }[]).map((j) => ({ jid: j.JobID, token: j.JobToken }));
      assert.equal(running.length, 3);
    });
    after(async () => {
      await dispatcher?.close();
      await svc?.close();
    });

    /** Sends one case; checks the answer's shape, the log, and that the service still answers. */
    async function send(what: string, method: string, path: string, init: { token?: string; type?: string; body?: string; headers?: Record<string, string> } = {}): Promise<number> {
      // Each case answers for its own log lines: one failure must not fail the surfaces after it.
      logged.length = 0;
      const headers: Record<string, string> = { ...init.headers };
      if (init.token) headers.authorization = `Bearer ${init.token}`;
      if (init.type) headers['content-type'] = init.type;
      const res = await request(`${svc.url}${path}`, { method: method as 'GET', headers, body: init.body, dispatcher });
      const where = `${what}: ${method} ${path.slice(0, 200)} ${init.body?.slice(0, 200) ?? ''}`;
      if (res.statusCode === 200 && String(res.headers['content-type']).startsWith('text/event-stream')) {
        res.body.destroy();
      } else {
        const answer = await res.body.text();
        assert.ok(res.statusCode < 500, `${where} → ${res.statusCode} ${answer.slice(0, 300)}`);
        if (res.statusCode >= 400) {
          assert.match(String(res.headers['content-type']), /^application\/json/, `${where} → ${res.statusCode} not JSON: ${answer.slice(0, 200)}`);
          assert.equal(typeof (JSON.parse(answer) as { error?: unknown }).error, 'string', `${where} → ${answer.slice(0, 200)}`);
        }
      }
      assert.deepEqual(logged, [], `${where} logged an error`);
      const health = await request(`${svc.url}/healthz`, { dispatcher });
      await health.body.dump();
      assert.equal(health.statusCode, 200, `${where}: /healthz answered ${health.statusCode} afterwards`);
      return res.statusCode;
    }

    const property = <T>(arb: fc.Arbitrary<T>, offset: number, check: (value: T) => Promise<unknown>) =>
      fc.assert(
        fc.asyncProperty(arb, async (v) => {
          await check(v);
        }),
        { numRuns: PER_SURFACE, seed: SEED + offset, endOnFailure: true },
      );

    it('JSON and parametric manifests', () =>
      property(fc.oneof(manifest, fc.array(manifest, { minLength: 1, maxLength: 3 })), 1, (m) => send('manifest', 'POST', '/jobs', { token: tokens.alice, type: 'application/json', body: json(m) })));

    it('JDL submissions', () => property(jdl, 2, (text) => send('jdl', 'POST', '/jobs', { token: tokens.alice, type: 'text/x-jdl', body: text })));

    it('search bodies and cursors', () =>
      property(fc.tuple(searchBody, fc.constantFrom<'alice' | 'admin'>('alice', 'admin')), 3, ([body, who]) => send('search', 'POST', '/jobs/search', { token: tokens[who], type: 'application/json', body: json(body) })));

    it('listing cursors and restrictions', () =>
      property(fc.tuple(cursor, fc.array(fc.tuple(fc.constantFrom(...ATTRIBUTES, 'sort', 'maxJobs'), queryValue), { maxLength: 2 })), 4, ([c, pairs]) =>
        send('list', 'GET', `/jobs?${new URLSearchParams([['cursor', c], ...pairs]).toString()}`, { token: tokens.alice }),
      ));

    it('summaries', () =>
      property(fc.tuple(summaryQuery, fc.constantFrom<'alice' | 'admin'>('alice', 'admin')), 5, ([pairs, who]) =>
        send('summary', 'GET', `/jobs/summary?${new URLSearchParams(pairs).toString()}`, { token: tokens[who] }),
      ));

    it('event streams resumed with Last-Event-ID', () =>
      property(fc.tuple(eventId, fc.boolean(), fc.constantFrom<'alice' | 'bob' | 'admin'>('alice', 'bob', 'admin')), 6, ([id, inHeader, who]) =>
        inHeader
          ? send('events', 'GET', '/jobs/events', { token: tokens[who], headers: { 'last-event-id': id.replace(/[\r\n]/g, '').split('\u0000').join('') } })
          : send('events', 'GET', `/jobs/events?${new URLSearchParams({ lastEventId: id }).toString()}`, { token: tokens[who] }),
      ));

    it('job-token reports', () =>
      property(fc.tuple(reportBody, fc.nat({ max: 2 }), fc.constantFrom('own', 'other', 'forged', 'user')), 7, ([body, i, whose]) => {
        const job = running[i]!;
        const other = running[(i + 1) % running.length]!;
        const token = whose === 'own' ? job.token : whose === 'other' ? other.token : whose === 'forged' ? `${job.token.slice(0, -4)}AAAA` : tokens.alice;
        return send('report', 'POST', `/jobs/${job.jid}/report`, { token, type: 'application/json', body: json(body) });
      }));

    it('dynamic-registration metadata', () =>
      property(registration, 8, (metadata) => send('registration', 'POST', '/oauth2/register', { type: 'application/json', body: json(metadata) })));
  });
}
