/**
 * The usage record of a Slurm run (docs/accounting.md): its resource is the partition it ran in, and its
 * CPU what the payload burnt, from sacct or, where Slurm's accounting is off (as on scripts/slurm-dev.sh),
 * from the batch script's own measure. Real daemons.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/dialects.ts';
import type { TestService } from '../helpers/service.ts';
import { startJobsService, submit, waitForStatus } from '../jobs/helpers.ts';
import { slurmUnavailable } from './slurm-available.ts';

const noSlurm = slurmUnavailable();

/** 1 s of CPU, half of it in a child it waits for; exits with `code`. */
const BURN = (code: number) =>
  ['import subprocess, sys', 'b = "import time" + chr(10) + "t = time.process_time()" + chr(10) + "while time.process_time() - t < 0.5: sum(range(20000))"', 'subprocess.run([sys.executable, "-c", b], check=True)', 'exec(b)', `raise SystemExit(${code})`].join('\n');

describe('usage records of Slurm runs', async () => {
  for (const { dialect, skip } of await dialects()) {
    describe(`on ${dialect}`, { skip: noSlurm ? `Slurm unavailable: ${noSlurm}` : skip }, () => {
      let svc: TestService;
      let alice: string;
      before(async () => {
        svc = await startJobsService(dialect, { scheduler: { pollIntervalMs: 200 }, sites: [{ name: 'Slurm', type: 'slurm', partition: 'short' }] });
        alice = await svc.token('alice');
      });
      after(async () => svc?.close());

      for (const code of [0, 4]) {
        test(`a batch job exiting ${code}: its record names the partition and carries the CPU burnt`, { timeout: 180_000 }, async () => {
          const jid = await submit(svc, alice, { Executable: 'python3', Arguments: `-c '${BURN(code)}'`, Sites: ['Slurm'] });
          const job = await waitForStatus(svc, alice, jid, ['Done', 'Failed', 'Killed'], 150_000);
          assert.equal(job.Status, code === 0 ? 'Done' : 'Failed', String(job.MinorStatus));
          const rows = await svc.ctx.db.selectFrom('usage_records').selectAll().where('job_id', '=', jid).execute();
          assert.equal(rows.length, 1);
          const r = rows[0]!;
          assert.equal(r.resource, 'short');
          assert.equal(r.site, 'Slurm');
          assert.equal(Number(r.exit_code), code);
          const cpu = Number(r.cpu_user_seconds) + Number(r.cpu_system_seconds);
          assert.ok(r.cpu_user_seconds !== null && cpu >= 0.95 && cpu < 2, `cpu ${cpu} s ≈ 1 s`);
          assert.ok(Number(r.wall_seconds) >= cpu - 0.05, `wall ${r.wall_seconds} ≥ cpu ${cpu}`);
        });
      }

      test('the accounting API sums them for the site and the partition: about 1 s of CPU per run', async () => {
        const from = new Date(Date.now() - 3_600_000).toISOString();
        const res = await svc.request(`/accounting/jobs?interval=total&groupBy=Site&from=${from}`, { token: alice });
        assert.equal(res.status, 200, res.text);
        const [row] = (res.json as { rows: { Group: string; Jobs: number; WallHours: number; CPUHours: number }[] }).rows;
        assert.equal(row?.Group, 'Slurm', res.text);
        assert.equal(row.Jobs, 2);
        assert.ok(row.CPUHours * 3600 >= 1.9 && row.CPUHours * 3600 < 4, `${row.CPUHours * 3600} s of CPU for two runs of 1 s`);
        assert.ok(row.WallHours >= row.CPUHours, res.text);
        const records = await svc.request(`/accounting/records?from=${from}`, { token: alice });
        assert.deepEqual((records.json as { records: { Resource: string }[] }).records.map((r) => r.Resource), ['short', 'short']);
      });
    });
  }
});
