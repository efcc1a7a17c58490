/**
 * GET /jobs/events end to end: curl follows the stream over TLS; status, application status and parameter
 * changes arrive with the visibility and restrictions of GET /jobs; Last-Event-ID resumes; two instances
 * on one database see each other's changes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, TEST_SETUP, type TestService } from '../helpers/service.ts';
import { curlStream, dataOf } from '../helpers/sse.ts';
import { startJobsService, submit, waitForStatus } from './helpers.ts';

const BIN = new URL('../../bin/dirigo.js', import.meta.url).pathname;

for (const { dialect, skip } of await dialects()) {
  describe(`live job events (${dialect})`, { skip }, () => {
    let svc: TestService;
    let other: TestService;
    let alice: string;
    let bob: string;
    before(async () => {
      svc = await startJobsService(dialect, { events: { heartbeatMs: 300, maxReplay: 3 } });
      // A second instance on the same database, with no site of its own running jobs.
      other = await startTestService({ dialect, sharing: svc, config: { jobs: { scheduler: { enabled: false }, sites: [{ name: 'Local', type: 'local' }] } } });
      alice = await svc.token('alice');
      bob = await svc.token('bob');
    });
    after(async () => {
      await other?.close();
      await svc?.close();
    });

    const follow = (service: TestService, query: string, token: string, headers: Record<string, string> = {}) =>
      curlStream(`${service.url}/jobs/events${query}`, service.pki.caFile, { authorization: `Bearer ${token}`, ...headers });

    it('streams the status changes of the caller’s jobs to curl, on this instance and another', async () => {
      const here = follow(svc, '', alice);
      // Each instance is its own issuer here (its own URL): a token of the other one.
      const there = follow(other, '', await other.token('alice'));
      const bobs = follow(svc, '', bob);
      try {
        await here.waitFor((e) => e.event === 'ready');
        await there.waitFor((e) => e.event === 'ready');
        await bobs.waitFor((e) => e.event === 'ready');
        const jid = await submit(svc, alice, { Executable: '/bin/true' });
        for (const stream of [here, there]) {
          for (const status of ['Waiting', 'Matched', 'Running', 'Done']) {
            const e = await stream.waitFor((e) => e.event === 'status' && dataOf(e).JobID === jid && dataOf(e).Status === status);
            assert.match(e.id!, /^\d+\.\d+$/);
          }
        }
        const statuses = here.events.filter((e) => e.event === 'status' && dataOf(e).JobID === jid).map((e) => dataOf(e).Status);
        assert.deepEqual(statuses, ['Received', 'Waiting', 'Matched', 'Running', 'Completing', 'Done'].filter((s) => statuses.includes(s)), 'in order');
        assert.ok(!bobs.events.some((e) => e.event === 'status' && dataOf(e).JobID === jid), "bob does not see alice's job");
        for (const deadline = Date.now() + 5000; !/^: keepalive$/m.test(here.raw()); ) {
          assert.ok(Date.now() < deadline, 'comment heartbeats (every 300 ms here)');
          await new Promise((r) => setTimeout(r, 50));
        }
        const frame = /id: \d+\.\d+\nevent: status\ndata: \{[^\n]*\}\n\n/;
        assert.match(here.raw(), frame);
      } finally {
        here.close();
        there.close();
        bobs.close();
      }
    });

    it('applies the restrictions of GET /jobs to the event, and sends application status and parameter changes', async () => {
      const done = follow(svc, '?Status=Done&JobGroup=events', alice);
      const all = follow(svc, '?JobGroup=events', alice);
      try {
        await done.waitFor((e) => e.event === 'ready');
        await all.waitFor((e) => e.event === 'ready');
        const script = `dirigo job report --status "half way" --param events=7`;
        const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: `-c '${script}'`, JobGroup: 'events' });
        await submit(svc, alice, { Executable: '/bin/true', JobGroup: 'elsewhere' });
        await done.waitFor((e) => dataOf(e).JobID === jid && dataOf(e).Status === 'Done');
        assert.deepEqual([...new Set(done.events.filter((e) => e.event === 'status').map((e) => dataOf(e).Status))], ['Done']);
        const app = await all.waitFor((e) => e.event === 'status' && dataOf(e).ApplicationStatus === 'half way');
        assert.equal(dataOf(app).Source, 'Job');
        const parameter = await all.waitFor((e) => e.event === 'parameter');
        assert.deepEqual([dataOf(parameter).JobID, dataOf(parameter).Name, dataOf(parameter).Value], [jid, 'events', '7']);
        assert.ok(all.events.every((e) => e.event === 'ready' || dataOf(e).JobID === jid), 'only the restricted group');
      } finally {
        done.close();
        all.close();
      }
    });

    it('sends a new subscriber only what happens after it connects', async () => {
      // Nobody listens while this job runs to its end.
      await new Promise((r) => setTimeout(r, 500));
      const jid = await submit(svc, alice, { Executable: '/bin/true', JobName: 'unheard' });
      await waitForStatus(svc, alice, jid, ['Done']);
      const late = follow(svc, '?JobName=unheard', alice);
      try {
        await late.waitFor((e) => e.event === 'ready');
        await new Promise((r) => setTimeout(r, 1000));
        assert.deepEqual(late.events.map((e) => e.event), ['ready']);
      } finally {
        late.close();
      }
    });

    it('dirigo jobs watch prints a line per change in a pipe, and JSON lines with --json', async () => {
      const work = mkdtempSync(join(tmpdir(), 'dirigo-watch-'));
      const u = svc.pki.users.alice!;
      const conn = ['--url', svc.url, '--ca', svc.pki.caFile, '--cert', u.certFile, '--key', u.keyFile, '--group', 'dirigo_user', '--setup', TEST_SETUP];
      const watch = (extra: string[]) => {
        const child = spawn(process.execPath, [BIN, 'jobs', 'watch', '--attr', 'JobGroup=watched', '--timeout', '20', ...extra, ...conn], { cwd: work, env: { PATH: process.env.PATH ?? '', HOME: work } });
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        const until = async (pattern: RegExp) => {
          for (const deadline = Date.now() + 20_000; !pattern.test(out); await new Promise((r) => setTimeout(r, 50))) {
            assert.ok(Date.now() < deadline, `watch printed:\n${out}\n${err}`);
          }
        };
        return { child, until, err: () => err };
      };
      const plain = watch([]);
      const json = watch(['--json']);
      try {
        for (const w of [plain]) for (let i = 0; !/watching/.test(w.err()) && i < 400; i++) await new Promise((r) => setTimeout(r, 50));
        await new Promise((r) => setTimeout(r, 1000));
        const jid = await submit(svc, alice, { Executable: '/bin/true', JobGroup: 'watched' });
        await plain.until(new RegExp(`^\\S+  ${jid}  Done  Execution Complete  `, 'm'));
        await json.until(new RegExp(`"JobID":${jid},"Status":"Done"`));
      } finally {
        plain.child.kill('SIGINT');
        json.child.kill('SIGINT');
      }
    });

    it('resumes after Last-Event-ID with what was missed, or says reset when it was too much', async () => {
      const first = follow(svc, '?JobName=resume', alice);
      const ready = await first.waitFor((e) => e.event === 'ready');
      first.close();
      const jid = await submit(svc, alice, { Executable: '/bin/sh', Arguments: '-c "exit 3"', JobName: 'resume' });
      const resumed = follow(svc, '?JobName=resume', alice, { 'Last-Event-ID': ready.id! });
      try {
        await resumed.waitFor((e) => dataOf(e).JobID === jid && dataOf(e).Status === 'Failed');
        const replayed = resumed.events.filter((e) => e.event === 'status').map((e) => dataOf(e).Status);
        assert.equal(replayed[0], 'Received', 'from the first missed change');
      } finally {
        resumed.close();
      }
      // More than maxReplay (3) missed events: a reset, then the live stream.
      const late = follow(svc, '?JobName=resume', alice, { 'Last-Event-ID': ready.id! });
      try {
        const reset = await late.waitFor((e) => e.event === 'reset');
        assert.match(dataOf(reset).reason as string, /list the jobs again/);
        await late.waitFor((e) => e.event === 'ready');
      } finally {
        late.close();
      }
      const bad = await svc.request('/jobs/events', { token: alice, headers: { 'last-event-id': 'yesterday' } });
      assert.equal(bad.status, 400);
      assert.match(bad.json.error_description, /Last-Event-ID: 'yesterday' is not an id of this stream/);
      const badAttribute = await svc.request('/jobs/events?Colour=red', { token: alice });
      assert.equal(badAttribute.status, 400);
      const anonymous = await svc.request('/jobs/events');
      assert.equal(anonymous.status, 401);
    });

    it('dirigo jobs watch draws a live table on a terminal, and stops on Ctrl-C', async () => {
      const work = mkdtempSync(join(tmpdir(), 'dirigo-watch-tty-'));
      const u = svc.pki.users.alice!;
      const argv = [process.execPath, BIN, 'jobs', 'watch', '--attr', 'JobGroup=tty', '--timeout', '60', '--url', svc.url, '--ca', svc.pki.caFile, '--cert', u.certFile, '--key', u.keyFile, '--group', 'dirigo_user', '--setup', TEST_SETUP];
      const command = `stty cols 160 rows 30; exec ${argv.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')}`;
      // script(1) runs the command on a pseudo-terminal (160 columns); what is written to its stdin is typed there.
      const child = spawn('script', ['-qfec', command, '/dev/null'], { cwd: work, env: { PATH: process.env.PATH ?? '', HOME: work } });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const CLEAR = '\x1b[H\x1b[2J';
      // The last frame drawn, without its colours.
      // eslint-disable-next-line no-control-regex -- the escape character starts the colour sequences removed here
      const frame = () => out.slice(out.lastIndexOf(CLEAR) + CLEAR.length).replace(/\x1b\[[0-9;]*m/g, '');
      const until = async (test: () => boolean, what: string) => {
        for (const deadline = Date.now() + 20_000; !test(); await new Promise((r) => setTimeout(r, 50))) assert.ok(Date.now() < deadline, `${what}; the terminal shows:\n${out}`);
      };
      try {
        await until(() => out.includes(CLEAR) && /0 job\(s\); live, Ctrl-C to stop/.test(frame()), 'no empty table once the stream is live');
        const jid = await submit(svc, alice, { Executable: '/bin/true', JobGroup: 'tty' });
        await until(() => new RegExp(`^\\s*${jid}\\s+Done\\s+Execution Complete`, 'm').test(frame()), `job ${jid} is not shown Done`);
        assert.match(frame(), /^\s*JobID\s+Status\s+MinorStatus\s+ApplicationStatus\s+Time\s*$/m);
        assert.match(frame(), /1 job\(s\); live, Ctrl-C to stop/);
        assert.ok(!/watching; one line per change/.test(out), 'a table, not lines');
        child.stdin.write('\x03');
        assert.equal(await exited, 0, out);
      } finally {
        child.kill('SIGKILL');
      }
    });
  });
}
