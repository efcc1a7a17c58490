/**
 * The accounting operations answer JSON or CSV (docs/accounting.md "API"), so openapi-fetch types their
 * data as either; these helpers ask for one and type the answer as that one.
 */
import { unwrap, type DirigoClient } from './connection.ts';
import type { paths } from './schema.ts';

type Get<P extends keyof paths> = paths[P] extends { get: infer O } ? O : never;
type Json<P extends keyof paths> = Get<P> extends { responses: { 200: { content: { 'application/json': infer T } } } } ? T : never;
type Query<P extends keyof paths> = Get<P> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

export type AccountingUsage = Json<'/accounting/jobs'>;
export type AccountingUsageQuery = Omit<Query<'/accounting/jobs'>, 'format'>;
export type AccountingRecords = Json<'/accounting/records'>;
export type AccountingRecordsQuery = Omit<Query<'/accounting/records'>, 'format'>;
export type AccountingQueue = Json<'/accounting/queue'>;
export type AccountingQueueQuery = Omit<Query<'/accounting/queue'>, 'format'>;

/**
 * Usage per bucket and group (GET /accounting/jobs) as JSON.
 * @example
 * ```ts
 * const { rows } = await accountingUsage(dirigo, { interval: 'month', groupBy: 'Site', allOwners: true });
 * ```
 */
export async function accountingUsage(client: DirigoClient, query: AccountingUsageQuery = {}): Promise<AccountingUsage> {
  return unwrap(await client.GET('/accounting/jobs', { params: { query: { ...query, format: 'json' } } })) as AccountingUsage;
}

/** A page of usage records (GET /accounting/records), newest first; `next` is the `before` of the next page. */
export async function accountingRecords(client: DirigoClient, query: AccountingRecordsQuery = {}): Promise<AccountingRecords> {
  return unwrap(await client.GET('/accounting/records', { params: { query: { ...query, format: 'json' } } })) as AccountingRecords;
}

/** The queue's history (GET /accounting/queue, JobAdministrator and JobMonitor) as JSON. */
export async function accountingQueue(client: DirigoClient, query: AccountingQueueQuery = {}): Promise<AccountingQueue> {
  return unwrap(await client.GET('/accounting/queue', { params: { query: { ...query, format: 'json' } } })) as AccountingQueue;
}

/**
 * One of the accounting tables as CSV text (a header line, then a line per row, CRLF line ends).
 * @example
 * ```ts
 * writeFileSync('usage.csv', await accountingCsv(dirigo, '/accounting/jobs', { interval: 'day', groupBy: 'OwnerGroup' }));
 * ```
 */
export async function accountingCsv(client: DirigoClient, path: '/accounting/jobs', query?: AccountingUsageQuery): Promise<string>;
export async function accountingCsv(client: DirigoClient, path: '/accounting/records', query?: AccountingRecordsQuery): Promise<string>;
export async function accountingCsv(client: DirigoClient, path: '/accounting/queue', query?: AccountingQueueQuery): Promise<string>;
export async function accountingCsv(client: DirigoClient, path: '/accounting/jobs' | '/accounting/records' | '/accounting/queue', query: object = {}): Promise<string> {
  const result = await client.GET(path as '/accounting/jobs', { params: { query: { ...query, format: 'csv' } }, parseAs: 'text' });
  return unwrap(result) as unknown as string;
}
