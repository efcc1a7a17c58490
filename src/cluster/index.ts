/** Several instances on one database: duties that one elected instance runs at a time. */
export { runDuty } from './duties.ts';
export { clusterMigrations } from './migrations.ts';
