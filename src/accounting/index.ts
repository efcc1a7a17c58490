/**
 * Accounting (docs/accounting.md): a usage record per run, hourly rollups, the queue's history, the
 * /accounting routes and the APEL export. The jobs domain writes the records; nothing here reads its tables.
 */
export { accountingMigrations } from './migrations.ts';
export { backfillRecords, recordRuns, type EndedRunRecord } from './records.ts';
export { AccountingConfigSchema } from './config-schema.ts';
export { startAccountingDuties } from './duties.ts';
export { accountingRoutes } from './routes.ts';
