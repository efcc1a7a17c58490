/**
 * Matching (issue 34): which Waiting jobs a resource asking for work gets. CONTRACT STUB: the interface the
 * executors and the agents call; its inside (task queues, fair share, running limits, bans) replaces this.
 */
import type { Db } from '../../kernel/db/database.ts';
import type { Dialect } from '../../kernel/db/dialect.ts';
import type { ResourceOffer } from '../../protocol/requirements.ts';
import type { JobsConfig } from '../config-schema.ts';
import type { JobEvents } from '../lifecycle/job-events.ts';
import { claimWaiting, type Claimant, type ClaimedJob } from '../lifecycle/claim.ts';

/** A job matched to a resource: what its holder needs to run it, and the processors it was given. */
export interface JobMatch extends ClaimedJob {
  /** Processors given (DIRIGO_NUMBER_OF_PROCESSORS): within the job's range, at most the offer's free cores. */
  processors: number;
}

export class Matcher {
  readonly #db: Db;
  readonly #events: JobEvents;
  readonly #dialect: Dialect;

  constructor(db: Db, events: JobEvents, dialect: Dialect, _config: JobsConfig) {
    this.#db = db;
    this.#events = events;
    this.#dialect = dialect;
  }

  /**
   * Waiting → Matched for up to `maxJobs` jobs that `offer` satisfies (every requirement; a consumable
   * offer shrinks with each job), not held back by a ban or a running limit, chosen by fair share.
   */
  async claim(offer: ResourceOffer, maxJobs: number, claimant: Claimant): Promise<JobMatch[]> {
    const jobs = await claimWaiting(this.#db, this.#events, this.#dialect, offer.site, maxJobs, claimant);
    return jobs.map((j) => ({ ...j, processors: Number(j.manifest.NumberOfProcessors ?? j.manifest.MinNumberOfProcessors ?? 1) }));
  }
}
