/**
 * This instance's live event streams (events-routes.ts serves them): the hub they read, the streams open
 * (which the limits count) and the timer that ends those whose token no longer authenticates. Started by
 * the composition root (app/app.ts), not by the route; all of it stops when the context closes.
 */
import { noLongerAuthenticated, type Principal } from '../auth/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { EventHub } from './events.ts';
import type { JobEvents } from './lifecycle/job-events.ts';

/** An open stream, as the limits and the token checks see it. */
export interface OpenStream {
  username: string;
  principal: Principal;
  /** Ends the stream, telling the client why (an `end` event). */
  end(reason: string): void;
}

export interface EventStreams {
  hub: EventHub;
  open: Set<OpenStream>;
  /** Open streams per username. */
  perUser: Map<string, number>;
}

/** `jobEvents`: the changes this instance makes, which the streams hear at once instead of at the next poll. */
export function startEventStreams(ctx: AppContext, jobEvents: JobEvents): EventStreams {
  const config = ctx.config.jobs.events;
  const hub = new EventHub(ctx.db, { pollMs: config.pollMs });
  const open = new Set<OpenStream>();
  const perUser = new Map<string, number>();
  const unlisten = jobEvents.onChanged(() => hub.wake());
  // One timer for every stream's token (revocations, membership); expiry has a timer of its own per stream.
  const recheck = setInterval(() => {
    const now = Date.now();
    for (const stream of open) {
      const reason = noLongerAuthenticated(ctx, stream.principal, now);
      if (reason) stream.end(reason);
    }
  }, config.tokenRecheckMs);
  recheck.unref();
  ctx.onClose(() => {
    unlisten();
    clearInterval(recheck);
    hub.close();
    for (const stream of open) stream.end('the service is stopping');
  });
  return { hub, open, perUser };
}
