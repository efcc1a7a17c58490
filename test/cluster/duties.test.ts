/**
 * Duty leases (src/cluster/duties.ts): one holder at a time, renewal by the holder, take-over once the
 * holder stops renewing, immediate hand-over on release; and runDuty runs rounds only while holding.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DutyLease, runDuty } from '../../src/cluster/duties.ts';
import { dialects } from '../helpers/dialects.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

for (const { dialect, skip } of await dialects()) {
  describe(`duty leases (${dialect})`, { skip }, () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService({ dialect });
    });
    after(async () => svc?.close());

    test('one holder at a time; renewals; take-over after expiry; release hands over at once', async () => {
      const a = new DutyLease(svc.ctx.db, 'test-duty', 300, 'host:1:a');
      const b = new DutyLease(svc.ctx.db, 'test-duty', 300, 'host:2:b');
      assert.equal(await a.acquire(), true);
      assert.equal(await b.acquire(), false, 'b cannot take a live lease');
      assert.equal(await a.acquire(), true, 'the holder renews');
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(await b.acquire(), true, 'b takes over once a stopped renewing');
      assert.equal(await a.acquire(), false, 'a has lost it');
      await b.release();
      assert.equal(await a.acquire(), true, 'a release hands the duty over at once');
      const rows = await svc.ctx.db.selectFrom('cluster_duties').selectAll().where('name', '=', 'test-duty').execute();
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.holder, 'host:1:a');
    });

    test('runDuty runs rounds only on the instance holding the lease', async () => {
      const blocker = new DutyLease(svc.ctx.db, 'test-loop', 60000, 'someone-else');
      assert.equal(await blocker.acquire(), true);
      let rounds = 0;
      const loop = runDuty(svc.ctx.db, 'test-loop', 50, async () => void rounds++, { warn: () => {} });
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(rounds, 0, 'no round while another instance holds the duty');
      await blocker.release();
      await new Promise((r) => setTimeout(r, 300));
      await loop.stop();
      assert.ok(rounds > 0, 'rounds start once the duty is free');
      const after = rounds;
      await new Promise((r) => setTimeout(r, 150));
      assert.equal(rounds, after, 'no round after stop()');
    });
  });
}
