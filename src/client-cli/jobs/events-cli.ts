/**
 * The CLI side of GET /jobs/events: `dirigo jobs watch` (a live table on a terminal, a line per change
 * otherwise) and `dirigo jobs wait` (until the jobs end, without polling). The stream is resumed with its
 * last event id when the connection drops (a restarting instance, a proxy timeout).
 */
// The event data as the API document describes it (packages/client generates the type).
import type { JobStatusEvent } from '@dirigo/client';
import { createParser } from 'eventsource-parser';
import { api, reach, refusal, type Connection } from '../shared/http.ts';
import { CliError, EXIT, progress } from '../../terminal/output.ts';
import { formatTable, paint, terminalWidth } from '../../terminal/terminal.ts';
import { FINAL_STATUSES, type JobStatus } from '../../protocol/job-status.ts';
import { statusColour } from './status-colour.ts';

type Query = Record<string, string | string[] | undefined>;

/** The token for each connection: the one given first, then a fresh one (a stream ends when its token does). */
export type Bearer = { token: string; renew?: () => Promise<string> };

/**
 * Calls `onEvent` for each event until it returns true, `signal` aborts, or the service refuses; a dropped
 * connection is opened again after `Last-Event-ID`, with a renewed token when `renew` is given (the service
 * ends a stream when its token expires or is revoked). `onReady` runs once the stream is live (first time only).
 */
export async function followEvents(
  conn: Connection,
  bearer: Bearer,
  query: Query,
  handlers: { onReady?: () => Promise<void>; onEvent: (type: string, data: Record<string, unknown>) => boolean | void },
  signal: AbortSignal,
): Promise<void> {
  let lastEventId: string | undefined;
  let ready = false;
  let connections = 0;
  for (let attempt = 0; !signal.aborted; attempt++) {
    let finished = false;
    try {
      const token = connections++ > 0 && bearer.renew ? await bearer.renew() : bearer.token;
      const res = await reach(
        conn,
        api(conn, token).GET('/jobs/events', { params: { query: query as never }, headers: lastEventId ? { 'last-event-id': lastEventId } : {}, parseAs: 'stream', signal }),
      );
      if (!res.response.ok) throw refusal(res.response.status, res.error);
      attempt = 0;
      const pending: Promise<void>[] = [];
      const parser = createParser({
        onEvent: (e) => {
          if (e.id) lastEventId = e.id;
          if (finished) return;
          if (e.event === 'ready' && !ready) {
            ready = true;
            if (handlers.onReady) pending.push(handlers.onReady());
            return;
          }
          if (e.event === 'status' || e.event === 'parameter' || e.event === 'reset') {
            if (handlers.onEvent(e.event, JSON.parse(e.data) as Record<string, unknown>) === true) finished = true;
          }
        },
      });
      const reader = (res.data as ReadableStream<Uint8Array>).getReader();
      // The fetch's signal does not always end a body already being read (a watch kept reading after
      // Ctrl-C, found by the pseudo-terminal test): cancelling the reader ends the pending read at once.
      const cancel = () => void reader.cancel().catch(() => {});
      signal.addEventListener('abort', cancel, { once: true });
      const decoder = new TextDecoder();
      try {
        while (!finished && !signal.aborted) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.feed(decoder.decode(value, { stream: true }));
          await Promise.all(pending.splice(0));
        }
      } finally {
        signal.removeEventListener('abort', cancel);
      }
      await reader.cancel().catch(() => {});
      if (finished || signal.aborted) return;
    } catch (err) {
      if (signal.aborted) return;
      // A refusal (401, 403, 400) is final; the service being away is not.
      if (err instanceof CliError && err.exitCode !== EXIT.server) throw err;
      if (attempt >= 20) throw err;
    }
    await new Promise((r) => setTimeout(r, Math.min(500 * 2 ** attempt, 10_000)));
  }
}

/** `dirigo jobs watch`: the jobs' latest states as they change. */
export async function watchJobs(conn: Connection, bearer: Bearer, query: Query, options: { json: boolean; timeoutMs: number }): Promise<number> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  const timer = Number.isFinite(options.timeoutMs) ? setTimeout(stop, options.timeoutMs) : undefined;
  const live = process.stdout.isTTY && !options.json;
  const jobs = new Map<number, JobStatusEvent>();
  let redraw: NodeJS.Timeout | undefined;
  const draw = () => {
    redraw = undefined;
    const rows = [...jobs.values()].sort((a, b) => b.JobID - a.JobID).slice(0, Math.max(5, (process.stdout.rows ?? 24) - 4));
    const table = formatTable(
      ['JobID', 'Status', 'MinorStatus', 'ApplicationStatus', 'Time'],
      rows.map((j) => [String(j.JobID), j.Status, j.MinorStatus, j.ApplicationStatus, j.Time]),
      { width: terminalWidth(), colour: (i, cell) => (i === 1 ? statusColour(cell) : undefined) },
    );
    process.stdout.write(`\x1b[H\x1b[2J${table}${paint(`${jobs.size} job(s); live, Ctrl-C to stop`, 'dim')}\n`);
  };
  try {
    await followEvents(
      conn,
      bearer,
      query,
      {
        onReady: async () => {
          if (live) draw();
          else if (!options.json) process.stderr.write('watching; one line per change\n');
        },
        onEvent: (type, data) => {
          if (options.json) process.stdout.write(`${JSON.stringify({ event: type, ...data })}\n`);
          else if (type === 'status') {
            const e = data as unknown as JobStatusEvent;
            if (live) {
              jobs.set(e.JobID, e);
              redraw ??= setTimeout(draw, 100);
            } else process.stdout.write(`${e.Time}  ${e.JobID}  ${e.Status}  ${e.MinorStatus}  ${e.ApplicationStatus}\n`);
          } else if (type === 'parameter' && !live) process.stdout.write(`${String(data.Time)}  ${String(data.JobID)}  parameter ${String(data.Name)}=${String(data.Value)}\n`);
        },
      },
      controller.signal,
    );
  } finally {
    clearTimeout(timer);
    clearTimeout(redraw);
    process.off('SIGINT', stop);
  }
  return EXIT.ok;
}

/**
 * `dirigo jobs wait`: one event stream for all the jobs, their current states read once it is live, then
 * the events until every job has ended. @returns 0 when all are Done, 1 when any ended otherwise, 3 on timeout
 */
export async function waitForJobs(conn: Connection, bearer: Bearer, ids: readonly number[], options: { json: boolean; timeoutMs: number }): Promise<number> {
  const started = Date.now();
  const pending = new Set(ids);
  const results = new Map<number, JobStatusEvent>();
  const p = progress();
  const seconds = () => Math.round((Date.now() - started) / 1000);
  const settle = (job: JobStatusEvent) => {
    if (!pending.has(job.JobID) || !FINAL_STATUSES.has(job.Status as JobStatus)) return;
    pending.delete(job.JobID);
    results.set(job.JobID, job);
    p.done(`job ${job.JobID}: ${job.Status} (${job.MinorStatus}) after ${seconds()} s`);
  };
  const controller = new AbortController();
  const timer = Number.isFinite(options.timeoutMs) ? setTimeout(() => controller.abort(), options.timeoutMs) : undefined;
  const client = api(conn, bearer.token);
  try {
    await followEvents(
      conn,
      bearer,
      { JobID: ids.map(String), allOwners: 'true' },
      {
        // Jobs that ended before the stream was live are read once.
        onReady: async () => {
          for (const jid of ids) {
            const res = await reach(conn, client.GET('/jobs/{jid}', { params: { path: { jid } } }));
            if (!res.response.ok) throw refusal(res.response.status, res.error);
            settle(res.data as unknown as JobStatusEvent);
          }
          if (pending.size === 0) controller.abort();
        },
        onEvent: (type, data) => {
          if (type === 'status') {
            const e = data as unknown as JobStatusEvent;
            if (pending.has(e.JobID)) p.update(`job ${e.JobID}: ${e.Status} — ${e.MinorStatus} (${seconds()} s)`);
            settle(e);
          }
          return pending.size === 0;
        },
      },
      controller.signal,
    );
  } finally {
    clearTimeout(timer);
  }
  if (options.json) process.stdout.write(`${JSON.stringify([...results.values()], null, 2)}\n`);
  if (pending.size > 0) {
    p.done(`still waiting for job(s) ${[...pending].join(', ')} after ${seconds()} s; giving up`);
    return EXIT.timeout;
  }
  return [...results.values()].every((j) => j.Status === 'Done') ? EXIT.ok : EXIT.failure;
}
