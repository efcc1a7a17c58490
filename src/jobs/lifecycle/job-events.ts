/**
 * "Jobs changed" (a status, an application status, a parameter): the events stream reads them at once
 * instead of at its next poll. One emitter per service, made by the composition root (app/app.ts) and
 * handed to every writer of job statuses (the jobs service, the scheduler, the agents service, stall
 * detection) and to the listener (event-streams.ts); nothing looks it up, so two services in one process
 * (the tests run several) each hear their own jobs only.
 */

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
