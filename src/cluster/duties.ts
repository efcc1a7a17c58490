/**
 * Background duties that must run once across instances (stall detection...). Each duty is a lease row:
 * an instance runs a round only while it holds the lease, renews it every round, and takes it over once
 * the holder stopped renewing (crashed, `kill -9`). A portable compare-and-set on one row, so it works on
 * SQLite and PostgreSQL alike, and a dead holder never blocks the duty for longer than the lease.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';

/** This process's identity as a duty holder. */
export const INSTANCE_ID = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

/**
 * @example
 *   const duty = new DutyLease(db, 'agent-stalls', 10000);
 *   if (await duty.acquire()) await detectStalls();
 */
export class DutyLease {
  readonly #db: Db;
  readonly name: string;
  readonly holder: string;
  readonly #ttlMs: number;

  constructor(db: Db, name: string, ttlMs: number, holder = INSTANCE_ID) {
    this.#db = db;
    this.name = name;
    this.#ttlMs = ttlMs;
    this.holder = holder;
  }

  /** Takes or renews the lease. @returns whether this instance holds it now. */
  async acquire(): Promise<boolean> {
    const now = nowIso();
    const until = new Date(Date.now() + this.#ttlMs).toISOString();
    const renewed = await this.#db
      .updateTable('cluster_duties')
      .set({ holder: this.holder, lease_until: until })
      .where('name', '=', this.name)
      .where((eb) => eb.or([eb('holder', '=', this.holder), eb('lease_until', '<', now)]))
      .executeTakeFirst();
    if (Number(renewed.numUpdatedRows) === 1) return true;
    try {
      await this.#db.insertInto('cluster_duties').values({ name: this.name, holder: this.holder, lease_until: until }).execute();
      return true;
    } catch {
      // The row exists and another instance's lease is still good.
      return false;
    }
  }

  /** Gives the lease up so another instance takes over at once (graceful shutdown). */
  async release(): Promise<void> {
    await this.#db.updateTable('cluster_duties').set({ lease_until: new Date(0).toISOString() }).where('name', '=', this.name).where('holder', '=', this.holder).execute();
  }
}

export interface DutyLoop {
  stop(): Promise<void>;
}

/**
 * Runs `round` every `intervalMs` on whichever instance holds the duty's lease (valid for 3 intervals).
 * Errors are logged and the loop goes on.
 */
export function runDuty(db: Db, name: string, intervalMs: number, round: () => Promise<void>, log: { warn(obj: object, msg: string): void }): DutyLoop {
  const lease = new DutyLease(db, name, Math.max(3 * intervalMs, 1000));
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  const tick = async () => {
    try {
      if (await lease.acquire()) await round();
    } catch (err) {
      log.warn({ err, duty: name }, 'background duty round failed');
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      current = tick().finally(schedule);
    }, intervalMs);
    // Never what keeps a process alive; stop() ends it with the service.
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
      await lease.release().catch(() => {});
    },
  };
}
