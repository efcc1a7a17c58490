/**
 * `dirigo workflow status WID --watch`: the workflow read again after its jobs' events (GET /jobs/events
 * restricted to its WorkflowID, no polling) until it ends. On a terminal the status is redrawn in place;
 * otherwise a line is written each time the counts change, then the final status.
 */
import { answer, api, type Connection } from '../shared/http.ts';
import { followEvents, type Bearer } from '../jobs/events-cli.ts';
import { EXIT } from '../../terminal/output.ts';
import { paint } from '../../terminal/terminal.ts';
import { formatWorkflow, summaryLine, type Workflow } from './format.ts';

/** Events close together (a parametric node's jobs all start at once) are read as one change. */
const SETTLE_MS = 200;

/**
 * @returns 0 when the workflow ends Done, 1 when it ends otherwise (or Ctrl-C stops the watch), 3 when
 * `timeoutMs` passes first
 */
export async function watchWorkflow(conn: Connection, bearer: Bearer, wid: number, options: { json: boolean; jobs: boolean; timeoutMs: number }): Promise<number> {
  const live = process.stdout.isTTY && !options.json;
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  let timedOut = false;
  const timer = Number.isFinite(options.timeoutMs) ? setTimeout(() => ((timedOut = true), stop()), options.timeoutMs) : undefined;
  // The reads use the token the stream last renewed (a long watch outlives its first token).
  let token = bearer.token;
  const renewing: Bearer = { token, ...(bearer.renew ? { renew: async () => (token = await bearer.renew!()) } : {}) };
  let latest: Workflow | undefined;
  let lastLine = '';
  let reading: Promise<void> = Promise.resolve();
  let scheduled: NodeJS.Timeout | undefined;
  let failure: unknown;

  const show = (w: Workflow) => {
    latest = w;
    if (live) {
      process.stdout.write(`\x1b[H\x1b[2J${formatWorkflow(w, options)}${paint(w.Status === 'Active' ? 'live, Ctrl-C to stop' : 'ended', 'dim')}\n`);
      return;
    }
    const line = summaryLine(w);
    if (line === lastLine) return;
    lastLine = line;
    if (options.json) process.stdout.write(`${JSON.stringify({ Time: new Date().toISOString(), WorkflowID: w.WorkflowID, Status: w.Status, Counts: w.Counts })}\n`);
    else process.stdout.write(`${new Date().toISOString().slice(0, 19)}Z  workflow ${w.WorkflowID}  ${line}\n`);
  };
  // One read at a time, in order: the last one shows the state after the last event.
  const read = () => {
    scheduled = undefined;
    reading = reading.then(async () => {
      if (controller.signal.aborted) return;
      try {
        const w = (await answer(conn, api(conn, token).GET('/workflows/{wid}', { params: { path: { wid } } }))) as Workflow;
        show(w);
        if (w.Status !== 'Active') controller.abort();
      } catch (err) {
        failure = err;
        controller.abort();
      }
    });
    return reading;
  };

  try {
    await followEvents(
      conn,
      renewing,
      { WorkflowID: String(wid), allOwners: 'true' },
      {
        // The workflow as it is once the stream is live: events after this are not missed.
        onReady: read,
        onEvent: (type) => {
          if (type === 'status' || type === 'reset') scheduled ??= setTimeout(() => void read(), SETTLE_MS);
        },
      },
      controller.signal,
    );
    await reading;
  } finally {
    clearTimeout(timer);
    clearTimeout(scheduled);
    process.off('SIGINT', stop);
  }
  if (failure) throw failure;
  if (!latest || latest.Status === 'Active') {
    if (latest && !live && !options.json) process.stdout.write(`\n${formatWorkflow(latest, options)}`);
    process.stderr.write(`dirigo workflow: workflow ${wid} is still Active; ${timedOut ? 'giving up (--timeout)' : 'stopped watching'}\n`);
    return timedOut ? EXIT.timeout : EXIT.failure;
  }
  if (!live && !options.json) process.stdout.write(`\n${formatWorkflow(latest, options)}`);
  return latest.Status === 'Done' ? EXIT.ok : EXIT.failure;
}
