/**
 * Every instance's gatekeeper loop (gates.ts): a pass every `jobs.workflows.gatePassMs`, and sooner when
 * jobs changed in this process (a parent ended, a job was held), at most one pass per MIN_GAP_MS however
 * many changes arrive. Instances that did not see a change still pass on their own clock: a pass skipped
 * because another instance's held the lock loses nothing, since the next one reads the same rows.
 */
import type { Db } from '../../kernel/db/database.ts';
import type { JobEvents } from '../lifecycle/job-events.ts';
import { Gatekeeper } from './gates.ts';

/** Changes arrive in bursts (a site ending many jobs): one pass for all of them. */
const MIN_GAP_MS = 500;

export interface GateLoop {
  stop(): Promise<void>;
}

/**
 * Starts the loop. @param wake tells the matchers that jobs were admitted (Waiting) @param log where a
 * failed pass is reported (the loop goes on)
 */
export function startGates(db: Db, events: JobEvents, passMs: number, wake: () => void, log: { warn(obj: object, msg: string): void }): GateLoop {
  const keeper = new Gatekeeper(db, events);
  let stopped = false;
  let woken = false;
  let timer: NodeJS.Timeout | undefined;
  let lastStart = 0;
  let current: Promise<void> = Promise.resolve();
  let running = false;

  const schedule = (ms: number) => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => void (current = run()), ms);
  };
  const run = async () => {
    running = true;
    woken = false;
    lastStart = Date.now();
    try {
      const result = await keeper.pass();
      if (result && result.admitted.length > 0) wake();
    } catch (err) {
      if (!stopped) log.warn({ err }, 'gatekeeper pass failed');
    } finally {
      running = false;
      // A change during the pass (its own admissions among them) asks for another soon.
      schedule(woken ? Math.max(0, MIN_GAP_MS - (Date.now() - lastStart)) : passMs);
    }
  };
  const unlisten = events.onChanged(() => {
    if (stopped) return;
    woken = true;
    if (!running) schedule(Math.max(0, MIN_GAP_MS - (Date.now() - lastStart)));
  });
  schedule(0);
  return {
    async stop() {
      stopped = true;
      unlisten();
      clearTimeout(timer);
      await current;
    },
  };
}
