/**
 * A jobs service configured with `jobs.sandbox.store: s3` keeps its sandboxes in the bucket: a multipart
 * submission's input sandbox is stored there, the local executor unpacks it from there, and the output
 * sandbox lands there; the data directory holds no sandbox. On both databases, against moto and s3rver.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { S3SandboxStore } from '../../src/jobs/s3-sandbox-store.ts';
import { sandboxStore } from '../../src/jobs/sandboxes.ts';
import { dialects } from '../helpers/dialects.ts';
import { S3_SERVERS, type S3Server, type S3ServerName } from '../helpers/s3-servers.ts';
import type { TestService } from '../helpers/service.ts';
import { postMultipart, startJobsService, untar, waitForStatus } from './helpers.ts';

for (const { dialect, skip } of await dialects()) {
  for (const name of ['moto', 's3rver'] as S3ServerName[]) {
    describe(`jobs with the S3 sandbox store (${dialect}, ${name})`, { skip }, () => {
      let server: S3Server;
      let svc: TestService;
      let store: S3SandboxStore;
      before(async () => {
        server = await S3_SERVERS[name]();
        const s3 = { bucket: server.bucket, endpoint: server.endpoint, forcePathStyle: true, prefix: 'sandboxes/', accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey };
        svc = await startJobsService(dialect, { sandbox: { store: 's3', s3 } });
        const configured = sandboxStore(svc.ctx);
        assert.ok(configured instanceof S3SandboxStore);
        assert.equal(sandboxStore(svc.ctx), configured, 'one store per service');
        store = configured;
      });
      after(async () => {
        // The service's own store: closed with it.
        await svc?.close();
        await server?.stop();
      });

      it('stores input and output sandboxes in the bucket, none in the data directory', async () => {
        const alice = await svc.token('alice');
        const res = await postMultipart(svc, alice, [
          { name: 'manifest', value: JSON.stringify({ Executable: '/bin/sh', Arguments: 'run.sh', InputSandbox: ['run.sh'], OutputSandbox: ['result.txt'] }) },
          { name: 'file', filename: 'run.sh', value: 'cat data.txt | wc -l > result.txt\n' },
          { name: 'file', filename: 'data.txt', value: 'a\nb\nc\n' },
        ]);
        assert.equal(res.status, 201, res.text);
        const jid = res.json.jids[0] as number;
        const job = await waitForStatus(svc, alice, jid);
        assert.equal(job.Status, 'Done', JSON.stringify(job));

        const row = await svc.ctx.db.selectFrom('jobs').select(['input_sandbox', 'output_sandbox']).where('job_id', '=', jid).executeTakeFirstOrThrow();
        assert.ok(row.input_sandbox && row.output_sandbox);
        const listed = new Set<string>();
        for await (const o of store.list()) listed.add(o.sha256);
        assert.ok(listed.has(row.input_sandbox) && listed.has(row.output_sandbox), [...listed].join());
        const input = await untar(await buffer(await store.get(row.input_sandbox)));
        assert.equal(input.get('data.txt')?.toString(), 'a\nb\nc\n');
        const output = await untar(await buffer(await store.get(row.output_sandbox)));
        assert.equal(output.get('result.txt')?.toString().trim(), '3');

        // The data directory's sandbox folder holds at most the (empty) temporaries.
        const dir = join(svc.dataDir, 'sandboxes');
        if (existsSync(dir)) assert.deepEqual(readdirSync(dir).filter((f) => f !== 'tmp'), []);
        if (existsSync(join(dir, 'tmp'))) assert.deepEqual(readdirSync(join(dir, 'tmp')), []);
      });
    });
  }
}
