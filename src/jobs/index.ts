/**
 * Jobs: manifests, the status state machine, the job store, sandboxes, the /jobs routes and the jobs
 * command. How jobs run is the executors' business; they reach it through {@link JobRunner}.
 */
export { jobsRoutes } from './routes.ts';
export { removeStaleUploads, startJobDuties } from './duties.ts';
export { startEventStreams } from './event-streams.ts';
export { jobsCommand } from './cli.ts';
export { jobCommand } from './job-cli.ts';
export type { JobRunner } from './service.ts';
export { JobsConfigSchema, type JobsConfig, type LocalSiteConfig } from './config-schema.ts';
export type { AgentSiteConfig } from './agent-site-schema.ts';
export type { SlurmSiteConfig } from './slurm-site-schema.ts';
export { jobsMigrations } from './migrations.ts';
export type { Manifest } from './manifest.ts';
export { JobStatus } from './model.ts';
export { JidParams } from './api-schemas.ts';
export { canTransition, changeStatus, confirmKill, fitMinorStatus, handOver, wrapMinorStatus } from './state-machine.ts';
export { waitingJobIdsFor } from './store.ts';
export { splitArguments } from './arguments.ts';
export { describeSkipped, packFiles, unpackArchive, type ArchiveFile, type SkippedFile } from './sandbox-archive.ts';
export { listConfined, openConfined, readConfined } from './confined-files.ts';
export { FileSandboxStore, type SandboxStore, type SizeLimit, type StoredObject } from './sandbox-store.ts';
export { sandboxStore } from './sandboxes.ts';
export { jobTokens } from './job-tokens.ts';
export { storeOutputTail } from './peek.ts';
