/**
 * Group commit for job submissions. With one transaction per submission, every submission pays
 * a COMMIT of its own: on PostgreSQL with `synchronous_commit` on, a COMMIT returns once its WAL is
 * flushed to disk, and BEGIN, the inserts and COMMIT are each a round trip to a backend; on SQLite, the
 * write lock and a WAL commit each. Here submissions that arrive while a transaction is in flight wait in
 * a queue, and the next transaction stores all of them (up to `bound` jobs): one COMMIT, and the same few
 * statements, for many submissions. No timer: a lone submission starts its transaction at once, and a
 * batch is whatever queued while the previous transaction ran, or, right after a transaction that ran
 * without yielding to the event loop (SQLite), whatever arrived in the same turn of the loop.
 *
 * Each submission stays all or nothing, and is answered only once the COMMIT that holds it returned. A
 * shared transaction that fails before its COMMIT was rolled back: each of its submissions is then tried
 * again alone, so that one bad submission fails only its own caller. One whose COMMIT fails may or may not
 * have taken effect (a connection lost during COMMIT): trying again could store a submission twice, so
 * every caller of that batch gets the error, as the caller of a lone submission would.
 */

/**
 * Stores `items` in one transaction, answering each in order; calls `committing()` after its last
 * statement, before the COMMIT (an error after it is the COMMIT's).
 */
export type CommitBatch<T, R> = (items: readonly T[], committing: () => void) => Promise<R[]>;

interface Waiting<T, R> {
  item: T;
  resolve(value: R): void;
  reject(err: unknown): void;
}

export class GroupCommit<T, R> {
  readonly #commit: CommitBatch<T, R>;
  readonly #weight: (item: T) => number;
  readonly #bound: number;
  readonly #queue: Waiting<T, R>[] = [];
  #running = false;
  /** What happened so far (tests and benches read it): transactions, and submissions retried alone. */
  readonly stats = { transactions: 0, batched: 0, largestBatch: 0, retriedAlone: 0 };

  /** @param weight an item's size (its number of jobs); a batch holds at most `bound`, or one item alone */
  constructor(commit: CommitBatch<T, R>, weight: (item: T) => number, bound: number) {
    this.#commit = commit;
    this.#weight = weight;
    this.#bound = bound;
  }

  /** Stores `item` with whatever else is queued; resolves after the COMMIT that holds it. */
  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      if (this.#running) return;
      this.#running = true;
      // A transaction that never yields to the event loop (node:sqlite's) has nothing queued behind it:
      // when one committed in this very turn, submissions are arriving back to back, and the next
      // transaction starts at the end of the turn (setImmediate, no delay) with all that arrived in it.
      if (this.#committedThisTurn) setImmediate(() => void this.#drain());
      else void this.#drain();
    });
  }

  /** Set when a transaction ends, cleared at the end of that event-loop turn. */
  #committedThisTurn = false;

  #ended(): void {
    if (this.#committedThisTurn) return;
    this.#committedThisTurn = true;
    setImmediate(() => (this.#committedThisTurn = false));
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        let weight = this.#weight(this.#queue[0]!.item);
        let n = 1;
        while (n < this.#queue.length && weight + this.#weight(this.#queue[n]!.item) <= this.#bound) weight += this.#weight(this.#queue[n++]!.item);
        const batch = this.#queue.splice(0, n);
        const failed = await this.#attempt(batch);
        if (failed) {
          // Rolled back: each alone, so that only the bad ones fail.
          this.stats.retriedAlone += batch.length;
          for (const one of batch) await this.#attempt([one]);
        }
      }
    } finally {
      this.#running = false;
      this.#ended();
    }
  }

  /**
   * One transaction for `batch`, answering its callers. @returns true when a batch of several failed
   * before its COMMIT (nobody answered yet, nothing stored)
   */
  async #attempt(batch: Waiting<T, R>[]): Promise<boolean> {
    let committing = false;
    this.stats.transactions++;
    if (batch.length > 1) this.stats.batched++;
    this.stats.largestBatch = Math.max(this.stats.largestBatch, batch.length);
    let results: R[];
    try {
      results = await this.#commit(
        batch.map((w) => w.item),
        () => (committing = true),
      );
    } catch (err) {
      if (batch.length > 1 && !committing) return true;
      for (const w of batch) w.reject(err);
      return false;
    }
    for (const [i, w] of batch.entries()) w.resolve(results[i]!);
    return false;
  }
}
