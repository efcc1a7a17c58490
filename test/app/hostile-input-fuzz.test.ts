/**
 * The project's hostile-input suite: every operation of the OpenAPI document gets hostile
 * values in every parameter and body — NUL and control characters, invalid and overlong UTF-8, 100k
 * characters, deep JSON, wrong types, huge, negative and fractional numbers, malformed JSON, multipart and
 * form bodies, duplicated parameters, path traversal — unauthenticated and with tokens and certificates.
 * It fails on any 5xx, on an error that is not the JSON error body, and on any error logged by the server.
 * Bounded here (DIRIGO_FUZZ_RUNS, default 400 per database, shared by the operations, fixed seed); `npm run fuzz` runs thousands,
 * and a failure prints the seed and path to replay it (DIRIGO_FUZZ_SEED).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { Agent, request } from 'undici';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const RUNS = Number(process.env.DIRIGO_FUZZ_RUNS ?? 400);
const SEED = process.env.DIRIGO_FUZZ_SEED === undefined ? 424242 : Number(process.env.DIRIGO_FUZZ_SEED);

/** Pages for browsers answer their errors as HTML pages, by design. */
const HTML_PAGES = /^\/oauth2\/(auth|interaction\/|login|logout|consent|device)/;

interface Operation {
  method: string;
  path: string;
  query: string[];
}

/** Raw text that ends up in a URL as is (so invalid percent-encodings reach the server). */
const rawUrlText = fc.constantFrom('%00', '%C0%AF', '%FF%FE', '%E0%80%AF', '%', '%zz', '..%2F..%2Fetc%2Fpasswd', '%0d%0aX-Injected:%201', '%ED%A0%80');

const hostileString = fc.oneof(
  fc.constantFrom('\u0000', 'a\u0000b', '\u0001\u001f\u007f', '../../etc/passwd', '/../..', '..', '', ' ', '\ud800', 'null', 'true', '-1', '1e30', 'NaN', '0.5', '-0', '9007199254740993', "'; drop table jobs; --", '<script>alert(1)</script>', '%00'),
  fc.integer({ min: 1, max: 5 }).map((n) => 'x'.repeat(n * 20000)),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

const hostileJsonValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.constantFrom(1e308, -1e308, -1, 0.5, Number.MAX_SAFE_INTEGER + 2, 2 ** 64, true, false, null, [], {}),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.array(hostileString, { maxLength: 3 }),
  fc.dictionary(hostileString, hostileString, { maxKeys: 3 }),
);

const deepJson = fc.integer({ min: 100, max: 20000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth));

const body = fc.oneof(
  fc.record({ type: fc.constant('application/json'), text: fc.dictionary(fc.oneof(fc.constantFrom('Executable', 'Arguments', 'JobName', 'CPUTime', 'Priority', 'Sites', 'Environment', 'Name', 'Type', 'Scope', 'Mode', 'Size', 'Checksum', 'decision', 'status', 'site'), hostileString), hostileJsonValue, { maxKeys: 6 }).map((o) => JSON.stringify(o)) }),
  fc.record({ type: fc.constant('application/json'), text: fc.oneof(deepJson, fc.constantFrom('', '{', '{"a":', '[1,', 'nul', '"\\ud800"', '{"__proto__":{"x":1}}', '{"a":1,"a":2}'), hostileJsonValue.map((v) => JSON.stringify(v) ?? 'null')) }),
  fc.record({ type: fc.constant('application/x-www-form-urlencoded'), text: fc.array(fc.tuple(fc.constantFrom('grant_type', 'client_id', 'client_secret', 'scope', 'token', 'code', 'user_code', 'group', 'setup', 'csrf', 'interaction'), fc.oneof(rawUrlText, hostileString.map(encode))), { maxLength: 6 }).map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&')) }),
  fc.record({ type: fc.constantFrom('multipart/form-data; boundary=xyz', 'multipart/form-data', 'multipart/form-data; boundary='), text: fc.oneof(fc.constantFrom('', '--xyz\r\n', '--xyz\r\nContent-Disposition: form-data; name="manifest"\r\n\r\n{"Executable":"/bin/true"', '--xyz--\r\n'), hostileString.map((s) => `--xyz\r\nContent-Disposition: form-data; name="manifest"\r\n\r\n${s}\r\n--xyz\r\nContent-Disposition: form-data; name="file"; filename="../../x"\r\n\r\n${s}\r\n--xyz--\r\n`)) }),
  fc.record({ type: fc.constantFrom('application/x-ndjson', 'text/plain', 'application/octet-stream', 'application/xml'), text: fc.array(fc.oneof(hostileString, hostileJsonValue.map((v) => JSON.stringify({ file: v, Size: v, dir: v }))), { maxLength: 4 }).map((lines) => lines.join('\n')) }),
);

/** encodeURIComponent, except that a lone surrogate (which it refuses) goes as its raw UTF-8 bytes. */
function encode(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80';
  }
}

function fillPath(template: string, values: string[]): string {
  let i = 0;
  return template.replace(/\{[^}]+\}/g, () => values[i++ % values.length] ?? 'x');
}

const pathValue = fc.oneof(
  rawUrlText,
  hostileString.map(encode),
  hostileString.map((s) => Buffer.from(`/${s}`).toString('base64url')),
  fc.constantFrom('Lw', 'L2E', 'L2EvYg', '1', '0', '-1', '99999999999999999999', '1.5', 'Lw%3D%3D', 'L2//', 'L+E'),
);

for (const { dialect, skip } of await dialects()) {
  describe(`hostile input on every operation (${dialect})`, { skip }, () => {
    let svc: TestService;
    let agents: Record<string, Agent>;
    let tokens: Record<string, string>;
    let operations: Operation[];
    const logged: string[] = [];
    before(async () => {
      const logStream = new PassThrough();
      logStream.on('data', (d: Buffer) => {
        for (const line of d.toString().split('\n')) if (/"level":(50|60)/.test(line)) logged.push(line);
      });
      svc = await startTestService({ dialect, logLevel: 'info', logStream, config: { catalogue: { rootMode: 0o777 } } });
      agents = {
        none: new Agent({ connect: { ca: svc.pki.ca.certPem } }),
        alice: new Agent({ connect: { ca: svc.pki.ca.certPem, cert: svc.pki.users.alice!.certPem, key: svc.pki.users.alice!.keyPem } }),
      };
      tokens = { alice: await svc.token('alice'), admin: await svc.token('admin', 'dirigo_admin'), pilot: await svc.token('pilot', 'dirigo_pilot') };
      const doc = (await svc.request('/openapi.json')).json as { paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>> };
      operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops).map(([method, op]) => ({ method: method.toUpperCase(), path, query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name) })),
      );
    });
    after(async () => {
      await Promise.all(Object.values(agents ?? {}).map((a) => a.close()));
      await svc?.close();
    });

    it('answers every hostile request with a 2xx, 3xx or a JSON 4xx, and logs no error', async () => {
      assert.ok(operations.length > 30, `only ${operations.length} operations documented`);
      const names = fc.oneof(
        { arbitrary: fc.constantFrom('maxJobs', 'startJob', 'allOwners', 'Status', 'Owner', 'Site', 'JobGroup', 'JobName', 'verbose', 'recursive', 'client_id', 'redirect_uri', 'scope', 'response_type', 'code_challenge', 'user_code', 'grant_type', 'group', 'setup', 'Run', 'Stream'), weight: 4 },
        { arbitrary: fc.string({ maxLength: 8 }), weight: 1 },
      );
      // Mostly one parameter at a time: a second, unknown one would be refused before the first is used.
      const query = fc.oneof({ arbitrary: fc.array(fc.tuple(names, fc.oneof(rawUrlText, hostileString.map(encode))), { minLength: 1, maxLength: 1 }), weight: 3 }, { arbitrary: fc.array(fc.tuple(names, fc.oneof(rawUrlText, hostileString.map(encode))), { maxLength: 4 }), weight: 1 });
      const who = fc.oneof(
        { arbitrary: fc.constant('alice'), weight: 4 },
        { arbitrary: fc.constant('admin'), weight: 2 },
        { arbitrary: fc.constantFrom('none', 'cert', 'pilot', 'garbage'), weight: 2 },
      );
      // Every operation gets its share of the cases, each with its own seed (SEED + its index).
      const perOperation = Math.max(4, Math.ceil(RUNS / operations.length));
      for (const [index, op] of operations.entries()) {
      await fc.assert(
        fc.asyncProperty(fc.array(pathValue, { minLength: 1, maxLength: 2 }), query, fc.integer({ min: 0, max: 4 }).map((n) => n === 0), fc.option(body, { nil: undefined }), who, async (pathValues, q, repeat, b, auth) => {
          const documented = op.query.map((name) => [name, 'x'] as [string, string]);
          const pairs = [...q, ...(repeat ? [...q, ...documented] : [])];
          const url = `${svc.url}${fillPath(op.path, pathValues)}${pairs.length ? `?${pairs.map(([k, v]) => `${encode(k)}=${v}`).join('&')}` : ''}`;
          const headers: Record<string, string> = {};
          if (auth === 'garbage') headers.authorization = 'Bearer eyJhbGciOiJub25lIn0.e30.';
          else if (auth !== 'none' && auth !== 'cert') headers.authorization = `Bearer ${tokens[auth]}`;
          const sendsBody = b !== undefined && op.method !== 'GET' && op.method !== 'DELETE';
          if (sendsBody) headers['content-type'] = b.type;
          let res;
          try {
            res = await request(url, { method: op.method as 'GET', headers, body: sendsBody ? b.text : undefined, dispatcher: auth === 'cert' ? agents.alice! : agents.none! });
          } catch (err) {
            const code = (err as { code?: string }).code;
            // undici refuses some URLs itself (a raw CRLF, say): nothing reached the server.
            if (code === 'UND_ERR_INVALID_ARG') return;
            // A server may answer (401, 413) before reading a large body and close the connection, as
            // HTTP allows; the client then sees the reset while still sending.
            if ((code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET') && sendsBody && b.text.length > 65536) return;
            throw err;
          }
          // An accepted event stream never ends (GET /jobs/events): its 200 is the answer.
          if (res.statusCode === 200 && String(res.headers['content-type']).startsWith('text/event-stream')) {
            res.body.destroy();
            return;
          }
          const text = await res.body.text();
          const where = `${op.method} ${url.slice(0, 300)} (${auth}${sendsBody ? `, ${b.type}` : ''})`;
          assert.ok(res.statusCode < 500, `${where} → ${res.statusCode} ${text.slice(0, 300)}`);
          if (res.statusCode >= 400 && op.path.startsWith('/scim/')) {
            // SCIM refuses with its own error message and media type (RFC 7644 §3.12, §8.1).
            // Refusals before routing (431, 413) come from the server as Dirigo's JSON error.
            assert.match(String(res.headers['content-type']), /^application\/(scim\+)?json/, `${where} → ${res.statusCode} not JSON: ${text.slice(0, 200)}`);
            const parsed = JSON.parse(text) as { status?: unknown; error?: unknown };
            assert.ok(parsed.status === String(res.statusCode) || typeof parsed.error === 'string', `${where} → ${text.slice(0, 200)}`);
          } else if (res.statusCode >= 400 && !HTML_PAGES.test(op.path)) {
            assert.match(String(res.headers['content-type']), /^application\/json/, `${where} → ${res.statusCode} not JSON: ${text.slice(0, 200)}`);
            const parsed = JSON.parse(text) as { error?: unknown };
            // The error body, or a bulk import's partial answer that carries one (`{"applied", "error"}`).
            assert.ok(typeof parsed.error === 'string' || (typeof parsed.error === 'object' && parsed.error !== null), `${where} → ${text.slice(0, 200)}`);
          }
          assert.deepEqual(logged, [], `${where} logged an error`);
        }),
        { numRuns: perOperation, seed: SEED + index, endOnFailure: true },
      );
      }
    });
  });
}
