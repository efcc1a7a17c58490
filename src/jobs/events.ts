/**
 * Live job events (GET /jobs/events): every status, application status and parameter change of the jobs a
 * subscriber may see, as Server-Sent Events.
 *
 * The events are the rows the changes already write: the status history (status and application status)
 * and the job parameters. One poller per process reads what is new for all its subscribers and hands each
 * the events it may see, so a change made by any instance reaches the subscribers of every instance (the
 * tables are shared); a change made here wakes the poller at once. Each event's id holds both tables'
 * positions, so a client that reconnects with Last-Event-ID gets what it missed (within the replay window).
 */
import type { Db } from '../kernel/db/database.ts';
import { ATTRIBUTE_COLUMNS, toRecord, type AttributeName, type JobRecord } from './model.ts';
import type { Visibility } from './privileges.ts';
import type { Restrictions } from './store.ts';

export interface JobEvent {
  /** SSE id: `<history id>.<parameter id>`, the positions after this event. */
  id: string;
  type: 'status' | 'parameter';
  data: Record<string, unknown>;
}

export interface Subscriber {
  visibility: Visibility;
  restrictions: Restrictions;
  send(event: JobEvent): void;
}

interface Position {
  history: number;
  parameter: number;
}

interface Row {
  kind: 'status' | 'parameter';
  id: number;
  job: JobRecord & { owner: string; owner_group: string };
  data: Record<string, unknown>;
}

/** Ids a concurrent transaction took but had not committed when a later one was read; dropped after this long. */
const GAP_MS = 30_000;
const BATCH = 5000;
const WAKE_DELAY_MS = 5;

export function formatEventId(p: Position): string {
  return `${p.history}.${p.parameter}`;
}

export function parseEventId(id: string | undefined): Position | undefined {
  const m = id ? /^(\d{1,15})\.(\d{1,15})$/.exec(id.trim()) : null;
  return m ? { history: Number(m[1]), parameter: Number(m[2]) } : undefined;
}

/** Whether a subscriber may see the job and the event meets its restrictions (Status is the event's own). */
export function wants(s: Pick<Subscriber, 'visibility' | 'restrictions'>, row: Pick<Row, 'job' | 'data'>): boolean {
  const v = s.visibility;
  if (v.kind === 'own' && row.job.owner !== v.owner) return false;
  if (v.kind === 'group' && row.job.owner !== v.owner && row.job.owner_group !== v.group) return false;
  for (const [name, values] of Object.entries(s.restrictions) as [AttributeName, (string | number)[]][]) {
    const value = name === 'Status' && typeof row.data.Status === 'string' ? row.data.Status : row.job[name];
    if (!values.includes(value as string | number)) return false;
  }
  return true;
}

/** A table read by id, remembering ids skipped by transactions still open (PostgreSQL sequences). */
class Tail {
  last = 0;
  readonly #gaps = new Map<number, number>();

  /** Starts again from `last` (the table's end), never going back: a concurrent read may be further on already. */
  reset(last: number): void {
    if (last <= this.last) return;
    this.last = last;
    this.#gaps.clear();
  }

  /** The ids to ask for besides those after `last`. */
  gaps(): number[] {
    const now = Date.now();
    for (const [id, since] of this.#gaps) if (now - since > GAP_MS) this.#gaps.delete(id);
    return [...this.#gaps.keys()];
  }

  seen(ids: readonly number[]): void {
    const now = Date.now();
    for (const id of ids) {
      this.#gaps.delete(id);
      if (id > this.last) {
        for (let missing = this.last + 1; missing < id && this.#gaps.size < 10_000; missing++) this.#gaps.set(missing, now);
        this.last = id;
      }
    }
  }
}

const JOB_COLUMNS = [...new Set([...ATTRIBUTE_COLUMNS, 'owner', 'owner_group'] as const)].map((c) => `jobs.${c}` as const);

function jobOf(r: Record<string, unknown>): Row['job'] {
  return { ...toRecord(r as never), owner: r.owner as string, owner_group: r.owner_group as string };
}

/** History rows (status and application status changes) with their jobs' current attributes. */
async function historyRows(db: Db, after: number, ids: number[], since?: string): Promise<Row[]> {
  let q = db.selectFrom('job_status_history as h').innerJoin('jobs', 'jobs.job_id', 'h.job_id');
  q = q.where((eb) => eb.or([eb('h.id', '>', after), ...(ids.length > 0 ? [eb('h.id', 'in', ids)] : [])]));
  if (since) q = q.where('h.status_time', '>=', since);
  const rows = await q
    .select(['h.id as event_id', 'h.status as event_status', 'h.minor_status as event_minor', 'h.application_status as event_application', 'h.status_time as event_time', 'h.source as event_source', ...JOB_COLUMNS])
    .orderBy('h.id')
    .limit(BATCH)
    .execute();
  return rows.map((r) => ({
    kind: 'status',
    id: Number(r.event_id),
    job: jobOf(r),
    data: { JobID: Number(r.job_id), Status: r.event_status, MinorStatus: r.event_minor, ApplicationStatus: r.event_application, Time: r.event_time, Source: r.event_source },
  }));
}

async function parameterRows(db: Db, after: number, ids: number[], since?: string): Promise<Row[]> {
  let q = db.selectFrom('job_parameters as p').innerJoin('jobs', 'jobs.job_id', 'p.job_id');
  q = q.where((eb) => eb.or([eb('p.id', '>', after), ...(ids.length > 0 ? [eb('p.id', 'in', ids)] : [])]));
  if (since) q = q.where('p.time', '>=', since);
  const rows = await q.select(['p.id as event_id', 'p.name as event_name', 'p.value as event_value', 'p.time as event_time', ...JOB_COLUMNS]).orderBy('p.id').limit(BATCH).execute();
  return rows.map((r) => ({ kind: 'parameter', id: Number(r.event_id), job: jobOf(r), data: { JobID: Number(r.job_id), Name: r.event_name, Value: r.event_value, Time: r.event_time } }));
}

/** Events in id order of each table, history first, with the position each leaves. */
function asEvents(history: Row[], parameters: Row[], start: Position): { row: Row; event: JobEvent }[] {
  const position = { ...start };
  return [...history, ...parameters].map((row) => {
    if (row.kind === 'status') position.history = Math.max(position.history, row.id);
    else position.parameter = Math.max(position.parameter, row.id);
    return { row, event: { id: formatEventId(position), type: row.kind, data: row.data } };
  });
}

export interface EventHubOptions {
  /** Longest pause between two reads while anyone listens (changes made here wake it sooner). */
  pollMs: number;
}

/** The job events of one database for this process's subscribers. */
export class EventHub {
  readonly #db: Db;
  readonly #options: EventHubOptions;
  readonly #subscribers = new Set<Subscriber>();
  readonly #history = new Tail();
  readonly #parameters = new Tail();
  #started: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** When the pending timer fires: a later request never postpones it (a stream of changes must not starve the poller). */
  #due = Infinity;
  #running = false;
  #again = false;
  #closed = false;

  constructor(db: Db, options: EventHubOptions) {
    this.#db = db;
    this.#options = options;
  }

  /**
   * Where the live stream is now: what a new subscriber's first event follows. A hub nobody listened to
   * has not read for a while: it starts again from the tables' ends, rather than send the new subscriber
   * everything since.
   */
  async position(): Promise<Position> {
    if (this.#subscribers.size === 0 && !this.#running) this.#started = undefined;
    await this.#start();
    return { history: this.#history.last, parameter: this.#parameters.last };
  }

  async #start(): Promise<void> {
    this.#started ??= (async () => {
      const [h, p] = await Promise.all([
        this.#db.selectFrom('job_status_history').select((eb) => eb.fn.max('id').as('id')).executeTakeFirst(),
        this.#db.selectFrom('job_parameters').select((eb) => eb.fn.max('id').as('id')).executeTakeFirst(),
      ]);
      this.#history.reset(Number(h?.id ?? 0));
      this.#parameters.reset(Number(p?.id ?? 0));
    })();
    return this.#started;
  }

  /**
   * Events after `from` (a Last-Event-ID) no older than `since`, for one subscriber, at most `limit`:
   * `complete` is false when there were more (the client should list again rather than trust its view).
   */
  async replay(s: Pick<Subscriber, 'visibility' | 'restrictions'>, from: Position, since: string, limit: number): Promise<{ events: JobEvent[]; complete: boolean }> {
    const now = await this.position();
    const events: JobEvent[] = [];
    let position = { ...from };
    for (;;) {
      const [history, parameters] = await Promise.all([
        position.history < now.history ? historyRows(this.#db, position.history, [], since) : Promise.resolve([]),
        position.parameter < now.parameter ? parameterRows(this.#db, position.parameter, [], since) : Promise.resolve([]),
      ]);
      const batch = asEvents(
        history.filter((r) => r.id <= now.history),
        parameters.filter((r) => r.id <= now.parameter),
        position,
      );
      if (batch.length === 0) return { events, complete: true };
      for (const { row, event } of batch) if (wants(s, row)) events.push(event);
      if (events.length > limit) return { events: events.slice(0, limit), complete: false };
      position = parseEventId(batch.at(-1)!.event.id)!;
      if (history.length < BATCH && parameters.length < BATCH) return { events, complete: true };
    }
  }

  subscribe(s: Subscriber): () => void {
    this.#subscribers.add(s);
    this.#schedule(0);
    return () => this.#subscribers.delete(s);
  }

  /** A change was made in this process: read now rather than at the next poll. */
  wake(): void {
    // A few milliseconds gather a burst of changes (a bulk submission) into one read.
    if (this.#subscribers.size > 0) this.#schedule(WAKE_DELAY_MS);
  }

  #schedule(delay: number): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    const due = Date.now() + delay;
    if (this.#timer !== undefined && this.#due <= due) return;
    clearTimeout(this.#timer);
    this.#due = due;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#due = Infinity;
      void this.#poll();
    }, delay);
  }

  async #poll(): Promise<void> {
    this.#running = true;
    let full = false;
    try {
      await this.#start();
      const start = { history: this.#history.last, parameter: this.#parameters.last };
      const [history, parameters] = await Promise.all([
        historyRows(this.#db, this.#history.last, this.#history.gaps()),
        parameterRows(this.#db, this.#parameters.last, this.#parameters.gaps()),
      ]);
      this.#history.seen(history.map((r) => r.id));
      this.#parameters.seen(parameters.map((r) => r.id));
      full = history.length === BATCH || parameters.length === BATCH;
      for (const { row, event } of asEvents(history, parameters, start)) {
        for (const s of this.#subscribers) if (wants(s, row)) s.send(event);
      }
    } catch {
      // The database may be away for a moment (a failover): the next round tries again.
    } finally {
      this.#running = false;
      const again = this.#again || full;
      this.#again = false;
      if (this.#subscribers.size > 0) this.#schedule(again ? 0 : this.#options.pollMs);
    }
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#subscribers.clear();
  }
}
