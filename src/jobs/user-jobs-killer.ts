/**
 * Killing all of a user's jobs for another domain (the registry's suspension with `killJobs`), which may
 * not import jobs: the composition root builds this and hands it over as a plain function.
 */
import type { AppContext } from '../kernel/context.ts';
import type { JobEvents } from './lifecycle/job-events.ts';
import type { ServiceSandboxStore } from './sandbox-store.ts';
import { JobsService, type JobRunner } from './service.ts';

/** `(actor, user)` → how many of `user`'s unfinished jobs `actor` killed (JobsService.killAllOf). */
export function userJobsKiller(ctx: AppContext, sandboxes: ServiceSandboxStore, runner: JobRunner | undefined, events: JobEvents): (actor: string, user: string) => Promise<number> {
  const service = new JobsService(ctx, ctx.config.jobs, sandboxes, runner, events);
  return (actor, user) => service.killAllOf(actor, user);
}
