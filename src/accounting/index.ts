/**
 * Accounting (docs/accounting.md): a usage record per run, hourly rollups, the queue's history, the
 * /accounting routes and the APEL export. The jobs domain writes the records; nothing here reads its tables.
 */
export { accountingMigrations } from './migrations.ts';
export { recordRuns, type EndedRunRecord } from './records.ts';
export { DIMENSIONS, queryUsage, type Dimension, type UsageInterval, type UsageQuery, type UsageRow } from './query.ts';
export { accountingRoutes } from './routes.ts';
