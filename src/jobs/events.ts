/**
 * Live job events (GET /jobs/events): every status, application status and parameter change of the jobs a
 * subscriber may see, as Server-Sent Events.
 *
 * The events are the rows the changes already write: the status history (status and application status)
 * and the job parameters. One poller per process reads what is new for all its subscribers and hands each
 * the events it may see, so a change made by any instance reaches the subscribers of every instance (the
 * tables are shared); a change made here wakes the poller at once. Each event's id holds both tables'
 * positions, so a client that reconnects with Last-Event-ID gets what it missed (within the replay window).
 *
 * Fan-out: subscribers are indexed by the owner and group they may see, so an event costs only
 * the streams that may see its job; each stream gets what one read found for it in one write (flush).
 * A replay reads, in SQL, only the changes of jobs its subscriber may see (the owner or owner group
 * condition, through jobs_owner_id and jobs_group_id), at most maxReplay + 1 rows of each table.
 */
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import { ATTRIBUTE_COLUMNS, ATTRIBUTES, toRecord, type AttributeName, type JobRecord } from './model.ts';
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
  /** Takes one event; nothing need be written before flush(). */
  send(event: JobEvent): void;
  /** Called once after each read that sent this subscriber anything: write what send() gathered. */
  flush(): void;
}

/** What a replay or a read is limited to: the jobs a subscriber may see, meeting its restrictions. */
export type Scope = Pick<Subscriber, 'visibility' | 'restrictions'>;

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
export function wants(s: Scope, row: Pick<Row, 'job' | 'data'>): boolean {
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

export interface RowsQuery {
  /** Rows after this id, and those of `gaps` (ids a concurrent transaction may still commit). */
  after: number;
  gaps?: readonly number[];
  /** Rows up to this id only (a replay stops where the live stream starts). */
  upTo?: number;
  /** Rows no older than this (ISO time). */
  since?: string;
  /** Only rows of jobs this subscriber may see, meeting its restrictions (a replay); every row without. */
  scope?: Scope;
  limit: number;
}

/**
 * The scope as SQL conditions on the joined jobs row: the owner (index jobs_owner_id), or the owner or the
 * owner group (jobs_group_id), and the restrictions on strings and JobID. Integer restrictions on int4
 * columns stay with wants() alone (a 15-digit value compared with an int4 column is an error on
 * PostgreSQL); wants() is applied to every row anyway, so these only ever narrow what the database returns.
 */
function scopeConditions(s: Scope, statusColumn: 'h.status' | 'jobs.status'): RawBuilder<SqlBool>[] {
  const v = s.visibility;
  const out: RawBuilder<SqlBool>[] = [];
  if (v.kind === 'own') out.push(sql<SqlBool>`${sql.ref('jobs.owner')} = ${v.owner}`);
  else if (v.kind === 'group') out.push(sql<SqlBool>`(${sql.ref('jobs.owner')} = ${v.owner} or ${sql.ref('jobs.owner_group')} = ${v.group})`);
  for (const [name, values] of Object.entries(s.restrictions) as [AttributeName, (string | number)[]][]) {
    if (ATTRIBUTES[name].type === 'integer' && name !== 'JobID') continue;
    const column = name === 'Status' ? statusColumn : `jobs.${ATTRIBUTES[name].column}`;
    out.push(sql<SqlBool>`${sql.ref(column)} in (${sql.join(values)})`);
  }
  return out;
}

/** The query of history rows (status and application status changes) with their jobs' current attributes. */
export function historyQuery(db: Db, r: RowsQuery) {
  let q = db.selectFrom('job_status_history as h').innerJoin('jobs', 'jobs.job_id', 'h.job_id');
  const gaps = r.gaps ?? [];
  q = q.where((eb) => eb.or([eb('h.id', '>', r.after), ...(gaps.length > 0 ? [eb('h.id', 'in', gaps)] : [])]));
  if (r.upTo !== undefined) q = q.where('h.id', '<=', r.upTo);
  if (r.since) q = q.where('h.status_time', '>=', r.since);
  for (const c of r.scope ? scopeConditions(r.scope, 'h.status') : []) q = q.where(c);
  return q
    .select(['h.id as event_id', 'h.status as event_status', 'h.minor_status as event_minor', 'h.application_status as event_application', 'h.status_time as event_time', 'h.source as event_source', ...JOB_COLUMNS])
    .orderBy('h.id')
    .limit(r.limit);
}

/** The query of job parameter rows with their jobs' current attributes (Status restricts the job's own). */
export function parameterQuery(db: Db, r: RowsQuery) {
  let q = db.selectFrom('job_parameters as p').innerJoin('jobs', 'jobs.job_id', 'p.job_id');
  const gaps = r.gaps ?? [];
  q = q.where((eb) => eb.or([eb('p.id', '>', r.after), ...(gaps.length > 0 ? [eb('p.id', 'in', gaps)] : [])]));
  if (r.upTo !== undefined) q = q.where('p.id', '<=', r.upTo);
  if (r.since) q = q.where('p.time', '>=', r.since);
  for (const c of r.scope ? scopeConditions(r.scope, 'jobs.status') : []) q = q.where(c);
  return q.select(['p.id as event_id', 'p.name as event_name', 'p.value as event_value', 'p.time as event_time', ...JOB_COLUMNS]).orderBy('p.id').limit(r.limit);
}

async function historyRows(db: Db, r: RowsQuery): Promise<Row[]> {
  const rows = await historyQuery(db, r).execute();
  return rows.map((r) => ({
    kind: 'status',
    id: Number(r.event_id),
    job: jobOf(r),
    data: { JobID: Number(r.job_id), Status: r.event_status, MinorStatus: r.event_minor, ApplicationStatus: r.event_application, Time: r.event_time, Source: r.event_source },
  }));
}

async function parameterRows(db: Db, r: RowsQuery): Promise<Row[]> {
  const rows = await parameterQuery(db, r).execute();
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
  /** The subscribers by what they may see: one owner's jobs (own and group), one group's (group), all. */
  readonly #byOwner = new Map<string, Set<Subscriber>>();
  readonly #byGroup = new Map<string, Set<Subscriber>>();
  readonly #all = new Set<Subscriber>();
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
   * Each table is read once, in SQL narrowed to the jobs the subscriber may see, for at most `limit` + 1
   * rows: a replay costs what the caller's own changes in the window cost, not the whole window's.
   */
  async replay(s: Scope, from: Position, since: string, limit: number): Promise<{ events: JobEvent[]; complete: boolean }> {
    const now = await this.position();
    const read = (upTo: number, after: number, rows: (db: Db, r: RowsQuery) => Promise<Row[]>) =>
      after < upTo ? rows(this.#db, { after, upTo, since, scope: s, limit: limit + 1 }) : Promise.resolve([]);
    const [history, parameters] = await Promise.all([read(now.history, from.history, historyRows), read(now.parameter, from.parameter, parameterRows)]);
    const events = asEvents(history.slice(0, limit), parameters.slice(0, limit), from)
      .filter(({ row }) => wants(s, row))
      .map(({ event }) => event);
    const complete = history.length <= limit && parameters.length <= limit && events.length <= limit;
    return { events: events.slice(0, limit), complete };
  }

  subscribe(s: Subscriber): () => void {
    this.#subscribers.add(s);
    const v = s.visibility;
    if (v.kind === 'all') this.#all.add(s);
    else {
      indexAdd(this.#byOwner, v.owner, s);
      if (v.kind === 'group') indexAdd(this.#byGroup, v.group, s);
    }
    this.#schedule(0);
    return () => {
      this.#subscribers.delete(s);
      this.#all.delete(s);
      if (v.kind !== 'all') indexDelete(this.#byOwner, v.owner, s);
      if (v.kind === 'group') indexDelete(this.#byGroup, v.group, s);
    };
  }

  /** Hands the event to the subscribers that may see its job (the indexes), meeting their restrictions. */
  #deliver(row: Row, event: JobEvent, touched: Set<Subscriber>): void {
    const give = (s: Subscriber) => {
      if (!wants(s, row)) return;
      s.send(event);
      touched.add(s);
    };
    for (const s of this.#byOwner.get(row.job.owner) ?? []) give(s);
    // A group subscriber that owns the job was served by the owner index already.
    for (const s of this.#byGroup.get(row.job.owner_group) ?? []) if (s.visibility.kind === 'group' && s.visibility.owner !== row.job.owner) give(s);
    for (const s of this.#all) give(s);
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
        historyRows(this.#db, { after: this.#history.last, gaps: this.#history.gaps(), limit: BATCH }),
        parameterRows(this.#db, { after: this.#parameters.last, gaps: this.#parameters.gaps(), limit: BATCH }),
      ]);
      this.#history.seen(history.map((r) => r.id));
      this.#parameters.seen(parameters.map((r) => r.id));
      full = history.length === BATCH || parameters.length === BATCH;
      const touched = new Set<Subscriber>();
      for (const { row, event } of asEvents(history, parameters, start)) this.#deliver(row, event, touched);
      // One write per stream for everything this read found for it (not one TLS record per event).
      for (const s of touched) s.flush();
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
    this.#byOwner.clear();
    this.#byGroup.clear();
    this.#all.clear();
  }
}

function indexAdd(index: Map<string, Set<Subscriber>>, key: string, s: Subscriber): void {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(s);
}

function indexDelete(index: Map<string, Set<Subscriber>>, key: string, s: Subscriber): void {
  const set = index.get(key);
  if (set?.delete(s) && set.size === 0) index.delete(key);
}
