/**
 * Output packing and peek against payloads that tamper with their own output: a FIFO in
 * StdOutput's place, a hard or symbolic link to a file of the service, the working directory swapped for
 * a link, a sparse file too large to pack in time. Real local site, real shell scripts, through the API.
 * The sites run without the payload sandbox (isolation: none), which would hide the service's files from
 * these payloads: the server's own file handling must hold without it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { request } from 'undici';
import { postMultipart, startJobsService, untar, waitForStatus } from '../jobs/helpers.ts';
import { flowAToken, prepareServe, startServe, userAgent, type ServeProcess } from '../helpers/serve-process.ts';

const SECRET = 'TOP-SECRET-service-configuration\n';

/** Submits `script` as run.sh in the input sandbox; returns the job id. */
async function runScript(svc: TestService, token: string, script: string, manifest: Record<string, unknown> = {}): Promise<number> {
  const res = await postMultipart(svc, token, [
    { name: 'manifest', value: JSON.stringify({ Executable: 'run.sh', InputSandbox: ['run.sh'], ...manifest }) },
    { name: 'file', value: `#!/bin/sh\n${script}`, filename: 'run.sh' },
  ]);
  assert.equal(res.status, 201, res.text);
  return res.json.jids[0] as number;
}

/** The files of a job's output sandbox. */
async function outputOf(svc: TestService, token: string, jid: number): Promise<Map<string, Buffer>> {
  const res = await svc.request(`/jobs/${jid}/outputsandbox`, { token });
  assert.equal(res.status, 200, res.text);
  return untar(res.body);
}

function assertNoSecret(files: Map<string, Buffer>): void {
  for (const [name, data] of files) assert.ok(!data.toString('latin1').includes('TOP-SECRET'), `${name} holds the service's file`);
}

/** Waits until the payload has done its trick (it creates `ready`), then peeks. */
async function peekWhenReady(svc: TestService, token: string, jid: number): Promise<{ status: number; text: string }> {
  const dir = join(svc.dataDir, 'work', String(jid));
  for (const deadline = Date.now() + 20_000; ; await new Promise((r) => setTimeout(r, 50))) {
    if (await exists(join(dir, 'ready'))) break;
    assert.ok(Date.now() < deadline, `job ${jid} never got ready`);
  }
  // The payload can be ready before the service has recorded it Running, and peek waits for no one.
  await waitForStatus(svc, token, jid, ['Running']);
  const res = await svc.request(`/jobs/${jid}/peek`, { token });
  return { status: res.status, text: res.text };
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** Lets a payload waiting for `go` in its working directory (or wherever it moved it to) end. */
function release(dir: string): void {
  writeFileSync(join(dir, 'go'), '');
}

const WAIT_FOR_GO = 'touch ready; while [ ! -e go ]; do sleep 0.05; done\n';

for (const { dialect, skip } of await dialects()) {
  describe(`output packing and peek of hostile payloads (${dialect})`, { skip }, () => {
    let svc: TestService;
    let alice: string;
    let secretFile: string;
    before(async () => {
      // One slot: a job whose output packing hung would hold it, and the next job would never run.
      svc = await startJobsService(dialect, { sites: [{ name: 'Local', type: 'local', slots: 1, isolation: 'none' }], sandbox: { outputPackTimeoutMs: 3000 } });
      alice = await svc.token('alice');
      secretFile = join(svc.dataDir, 'secret-config.yaml');
      writeFileSync(secretFile, SECRET);
    });
    after(() => svc?.close());

    it('ends a job that replaced std.out with a FIFO, naming what it skipped, and frees its slot', { timeout: 60_000 }, async () => {
      const jid = await runScript(svc, alice, 'echo kept > kept.txt\nrm std.out && mkfifo std.out\nmkfifo data.txt\n', { OutputSandbox: ['*.txt'] });
      const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed']);
      assert.equal(job.Status, 'Done', JSON.stringify(job));
      assert.match(String(job.MinorStatus), /std\.out skipped: not a regular file/);
      assert.match(String(job.MinorStatus), /data\.txt skipped: not a regular file/);
      const files = await outputOf(svc, alice, jid);
      assert.deepEqual([...files.keys()].sort(), ['kept.txt', 'std.err']);
      // The only slot is free again: the next job runs to its end.
      const next = await runScript(svc, alice, 'echo next\n');
      assert.equal((await waitForStatus(svc, alice, next)).Status, 'Done');
      assert.equal((await outputOf(svc, alice, next)).get('std.out')?.toString(), 'next\n');
    });

    it('neither peeks at nor packs a hard link to a file of the service', { timeout: 60_000 }, async () => {
      const jid = await runScript(svc, alice, `rm std.out && ln "$SECRET" std.out\nln "$SECRET" copy.txt\n${WAIT_FOR_GO}`, {
        OutputSandbox: ['*.txt'],
        Environment: { SECRET: secretFile },
      });
      const peek = await peekWhenReady(svc, alice, jid);
      assert.ok(!peek.text.includes('TOP-SECRET'), `peek showed the service's file: ${peek.text}`);
      assert.equal(peek.status, 409, peek.text);
      assert.match(JSON.parse(peek.text).error_description, /StdOutput 'std\.out' is not shown: a file with \d+ hard links/);
      release(join(svc.dataDir, 'work', String(jid)));
      const job = await waitForStatus(svc, alice, jid);
      assert.equal(job.Status, 'Done', JSON.stringify(job));
      assert.match(String(job.MinorStatus), /std\.out skipped: a file with \d+ hard links/);
      assert.match(String(job.MinorStatus), /copy\.txt skipped: a file with \d+ hard links/);
      const files = await outputOf(svc, alice, jid);
      assertNoSecret(files);
      assert.deepEqual([...files.keys()].sort(), ['std.err']);
    });

    it('neither peeks at nor packs a symbolic link, nor a working directory swapped for a link', { timeout: 60_000 }, async () => {
      // A folder of the service's that holds a file named as the job's StdOutput.
      const elsewhere = join(svc.dataDir, 'elsewhere');
      mkdirSync(elsewhere, { recursive: true });
      writeFileSync(join(elsewhere, 'std.out'), SECRET);
      writeFileSync(join(elsewhere, 'std.err'), SECRET);
      const linked = await runScript(svc, alice, `ln -s "$SECRET" leak.txt\nrm std.out && ln -s "$SECRET" std.out\n${WAIT_FOR_GO}`, {
        OutputSandbox: ['*.txt'],
        Environment: { SECRET: secretFile },
      });
      const peekLink = await peekWhenReady(svc, alice, linked);
      assert.ok(!peekLink.text.includes('TOP-SECRET'));
      assert.equal(peekLink.status, 409, peekLink.text);
      assert.match(JSON.parse(peekLink.text).error_description, /is not shown: a symbolic link/);
      release(join(svc.dataDir, 'work', String(linked)));
      const a = await waitForStatus(svc, alice, linked);
      assert.match(String(a.MinorStatus), /std\.out skipped: a symbolic link/);
      assert.match(String(a.MinorStatus), /leak\.txt skipped: a symbolic link/);
      assertNoSecret(await outputOf(svc, alice, linked));

      // The payload moves its working directory aside and puts a link to the service's folder in its place.
      const swapped = await runScript(svc, alice, `touch moved\ncd .. && mv "$DIRIGO_JOB_ID" "moved-$DIRIGO_JOB_ID" && ln -s "$ELSEWHERE" "$DIRIGO_JOB_ID"\ncd "moved-$DIRIGO_JOB_ID"\n${WAIT_FOR_GO}`, {
        Environment: { ELSEWHERE: elsewhere },
      });
      const movedDir = join(svc.dataDir, 'work', `moved-${swapped}`);
      for (const deadline = Date.now() + 20_000; !(await exists(join(movedDir, 'ready'))); await new Promise((r) => setTimeout(r, 50))) {
        assert.ok(Date.now() < deadline, 'the payload never moved its directory');
      }
      await waitForStatus(svc, alice, swapped, ['Running']);
      const peekSwapped = await svc.request(`/jobs/${swapped}/peek`, { token: alice });
      assert.ok(!peekSwapped.text.includes('TOP-SECRET'), `peek followed the link: ${peekSwapped.text}`);
      assert.equal(peekSwapped.status, 409, peekSwapped.text);
      assert.match(peekSwapped.json.error_description, /a directory on its path is a symbolic link/);
      release(movedDir);
      const b = await waitForStatus(svc, alice, swapped);
      assert.match(String(b.MinorStatus), /std\.out skipped: a directory on its path is a symbolic link/);
      assertNoSecret(await outputOf(svc, alice, swapped));
    });

    it('fails a job whose output takes longer than outputPackTimeoutMs to pack, and frees its slot', { timeout: 60_000 }, async () => {
      // A sparse file of 200 GiB: no disk used, but far more to read and compress than the deadline allows.
      const jid = await runScript(svc, alice, 'truncate -s 200G big.dat\necho done\n', { OutputSandbox: ['big.dat'] });
      const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed'], 40_000);
      assert.equal(job.Status, 'Failed', JSON.stringify(job));
      assert.match(String(job.MinorStatus), /^Output packing timed out after 3 s \(jobs\.sandbox\.outputPackTimeoutMs\)/);
      const next = await runScript(svc, alice, 'echo next\n');
      assert.equal((await waitForStatus(svc, alice, next)).Status, 'Done');
      assert.equal((await svc.request('/healthz')).status, 200);
    });
  });

  describe(`a shutdown is not held by output packing (${dialect})`, { skip }, () => {
    it('close() returns while a job’s output is being packed', { timeout: 60_000 }, async () => {
      const svc = await startJobsService(dialect, { sites: [{ name: 'Local', type: 'local', slots: 1, isolation: 'none' }] });
      let closed = false;
      try {
        const alice = await svc.token('alice');
        const jid = await runScript(svc, alice, 'truncate -s 500G big.dat\n', { OutputSandbox: ['big.dat'] });
        await waitForStatus(svc, alice, jid, ['Completing'], 20_000);
        await svc.close();
        closed = true;
      } finally {
        if (!closed) await svc.close().catch(() => {});
      }
    });
  });

  describe(`a real server and its config.yaml (${dialect})`, { skip }, () => {
    it('does not pack a hard link to its config.yaml, and stops on SIGTERM while packing', { timeout: 120_000 }, async () => {
      const setup = await prepareServe(dialect, { scheduler: { pollIntervalMs: 100 }, sites: [{ name: 'Local', type: 'local', slots: 1, isolation: 'none' }] });
      const agent = userAgent(setup.pki, 'alice');
      let server: ServeProcess | undefined;
      try {
        server = await startServe(setup);
        const token = await flowAToken(server.url, agent);
        const call = async (path: string, body?: unknown) => {
          const res = await request(server!.url + path, {
            method: body ? 'POST' : 'GET',
            dispatcher: agent,
            headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
            body: body ? JSON.stringify(body) : undefined,
          });
          return { status: res.statusCode, body: Buffer.from(await res.body.arrayBuffer()) };
        };
        const until = async (jid: number, statuses: string[]) => {
          for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 50))) {
            const job = JSON.parse((await call(`/jobs/${jid}`)).body.toString()) as Record<string, unknown>;
            if (statuses.includes(String(job.Status))) return job;
            assert.ok(Date.now() < deadline, `job ${jid} is still ${String(job.Status)} (${String(job.MinorStatus)})`);
          }
        };
        const config = readFileSync(setup.configFile, 'utf8');
        const submitted = await call('/jobs', { Executable: '/bin/sh', Arguments: `-c 'rm std.out && ln "$CONFIG" std.out; mkfifo std.err.new && mv -f std.err.new std.err'`, Environment: { CONFIG: setup.configFile } });
        const [linked] = JSON.parse(submitted.body.toString()).jids as number[];
        const job = await until(linked!, ['Done', 'Failed']);
        assert.match(String(job.MinorStatus), /std\.out skipped: a file with \d+ hard links; std\.err skipped: not a regular file/);
        const files = await untar((await call(`/jobs/${linked}/outputsandbox`)).body);
        for (const [name, data] of files) assert.ok(!data.toString().includes(config.slice(0, 40)), `${name} holds config.yaml`);

        // A job whose output would take minutes to pack: SIGTERM stops the server all the same.
        const big = await call('/jobs', { Executable: '/bin/sh', Arguments: `-c 'truncate -s 500G big.dat'`, OutputSandbox: ['big.dat'] });
        const [packing] = JSON.parse(big.body.toString()).jids as number[];
        await until(packing!, ['Completing']);
        server.child.kill('SIGTERM');
        assert.equal(await server.exited, 0);
      } finally {
        if (server && server.child.exitCode === null) {
          server.child.kill('SIGKILL');
          await server.exited;
        }
        await agent.close();
        await setup.dropSchema?.();
        rmSync(setup.dataDir, { recursive: true, force: true });
      }
    });
  });
}
