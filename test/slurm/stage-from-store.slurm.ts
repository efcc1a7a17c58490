/**
 * A Slurm site with `stageInputFrom: store` (docs/sandboxes.md, direct transfers 7), against the real
 * daemons and the S3 store on moto_server: the batch script downloads the input sandbox itself with curl
 * from a presigned GET and checks its sha256 before unpacking; the service writes no copy of it in the
 * staging directory. Bytes that do not match the sha256 are never unpacked.
 *
 * Run alone: `node --import ./test/helpers/no-network.ts --import ./test/helpers/scratch-dir.ts --test
 * --test-concurrency=1 test/slurm/stage-from-store.slurm.ts`.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { postMultipart, startJobsService, untar, waitForStatus } from '../jobs/helpers.ts';
import { slurmUnavailable } from './slurm-available.ts';
import { batchScript, parseExitRecord } from '../../src/executors/slurm-script.ts';
import { sandboxStore } from '../../src/jobs/sandboxes.ts';

const noSlurm = slurmUnavailable();

const SCRIPT = `#!/bin/sh
cat input.txt
echo result > result.txt
`;

describe('Slurm staging from the sandbox store', { concurrency: true }, async () => {
  for (const { dialect, skip } of await dialects()) {
    describe(`on ${dialect}`, { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : skip }, () => {
      let svc: TestService;
      let alice: string;
      before(async () => {
        svc = await startJobsService(
          dialect,
          {
            scheduler: { pollIntervalMs: 200 },
            sites: [{ name: 'SlurmStore', type: 'slurm', partition: 'debug', stageInputFrom: 'store', keepStaging: true }],
            sandbox: { stagePresignTtlSeconds: 600 },
          },
          { sandboxStore: 's3' },
        );
        alice = await svc.token('alice');
      });
      after(async () => svc?.close());

      test('the batch script downloads the input sandbox from a presigned GET, checks it and runs the job', async () => {
        const res = await postMultipart(svc, alice, [
          { name: 'manifest', value: JSON.stringify({ Executable: 'run.sh', Sites: ['SlurmStore'], OutputSandbox: ['result.txt'] }) },
          { name: 'run.sh', value: SCRIPT, filename: 'run.sh' },
          { name: 'input.txt', value: 'input from the store\n', filename: 'input.txt' },
        ]);
        assert.equal(res.status, 201, res.text);
        const jid = res.json.jids[0] as number;
        const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 90000);
        assert.equal(job.Status, 'Done', String(job.MinorStatus));
        const out = await svc.request(`/jobs/${jid}/outputsandbox?via=api`, { token: alice });
        assert.equal(out.status, 200);
        const files = await untar(out.body);
        assert.equal(files.get('std.out')?.toString(), 'input from the store\n');
        assert.equal(files.get('result.txt')?.toString(), 'result\n');
        // The script (kept: keepStaging) fetched it with curl and checked it; the service wrote no copy first.
        const row = await svc.ctx.db.selectFrom('jobs').select(['executor_ref', 'input_sandbox']).where('job_id', '=', jid).executeTakeFirstOrThrow();
        const { stage } = JSON.parse(row.executor_ref!) as { stage: string };
        const script = readFileSync(join(stage, 'job.sh'), 'utf8');
        assert.match(script, /^curl -fsS .* -o "\$stage\/input\.tar\.gz" 'http:\/\/127\.0\.0\.1:\d+\/.*X-Amz-Signature=/m);
        assert.ok(script.includes(`printf '%s  %s\\n' ${row.input_sandbox} "$stage/input.tar.gz" | sha256sum -c --status -`), script);
        assert.equal(createHash('sha256').update(readFileSync(join(stage, 'input.tar.gz'))).digest('hex'), row.input_sandbox);
      });

      test('bytes that do not hash to the sandbox are never unpacked (the script run by bash alone)', async () => {
        const store = sandboxStore(svc.ctx);
        const stored = await store.put(Readable.from([Buffer.from('not the sandbox the job names')]));
        const named = createHash('sha256').update('another sandbox').digest('hex');
        const { url } = await store.presignGet(stored.sha256, 'input.tar.gz', { ttlSeconds: 60 });
        const dir = mkdtempSync(join(tmpdir(), 'dirigo-stage-check-'));
        try {
          writeFileSync(join(dir, 'job.sh'), batchScript({ jobId: 1, site: 'SlurmStore', executable: '/bin/true', argv: [], environment: {}, stdout: 'std.out', stderr: 'std.err', hasInput: false, fetchInput: { url, sha256: named } }));
          assert.throws(() => execFileSync('bash', ['job.sh'], { cwd: dir, stdio: 'ignore' }));
          assert.deepEqual(parseExitRecord(readFileSync(join(dir, 'exit'), 'utf8')), { kind: 'setup-failed', why: 'the input sandbox does not match its sha256' });
          // The right sha256: it is unpacked (and tar says these bytes are no archive).
          writeFileSync(join(dir, 'job.sh'), batchScript({ jobId: 1, site: 'SlurmStore', executable: '/bin/true', argv: [], environment: {}, stdout: 'std.out', stderr: 'std.err', hasInput: false, fetchInput: { url, sha256: stored.sha256 } }));
          assert.throws(() => execFileSync('bash', ['job.sh'], { cwd: dir, stdio: 'ignore' }));
          assert.deepEqual(parseExitRecord(readFileSync(join(dir, 'exit'), 'utf8')), { kind: 'setup-failed', why: 'the input sandbox could not be unpacked' });
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      });
    });
  }
});
