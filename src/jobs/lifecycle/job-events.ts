/**
 * "Jobs changed" (a status, an application status, a parameter): the events stream reads them at once
 * instead of at its next poll. The emitter belongs to the jobs of one database, not to the process: two
 * services in one process (the tests run several) each hear their own jobs only.
 */
import type { Db } from '../../kernel/db/database.ts';

export class JobEvents {
  readonly #listeners = new Set<() => void>();

  /** Calls `listener` after jobs of this database change in this process. @returns unsubscribe */
  onChanged(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  changed(): void {
    for (const listener of this.#listeners) listener();
  }
}

/**
 * Keyed by the database's adapter: a Kysely transaction is another object than its database but shares
 * its adapter, so a change made in a transaction reaches the database's listeners.
 */
const emitters = new WeakMap<object, JobEvents>();

/** The emitter of `db`'s jobs (the same for the database and its transactions). */
export function jobEvents(db: Db): JobEvents {
  const key = db.getExecutor().adapter;
  let events = emitters.get(key);
  if (!events) {
    events = new JobEvents();
    emitters.set(key, events);
  }
  return events;
}
