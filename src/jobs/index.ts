/**
 * Jobs: manifests, the status state machine, the job store, sandboxes and the /jobs routes (`dirigo jobs` is
 * src/client-cli's). Where jobs run is the executors' and the agents' business (the jobs domain reaches them through
 * {@link JobRunner}); every step of a job's life they take — claim, leases, hand-over, requeue,
 * reschedule — is the job lifecycle's (lifecycle/), the only code besides the store that touches the jobs tables.
 */
export { jobsRoutes } from './routes.ts';
export { userJobsKiller } from './user-jobs-killer.ts';
export { removeStaleUploads, startJobDuties } from './duties.ts';
export { queueCounts } from './counts.ts';
export { startEventStreams } from './event-streams.ts';
export { checkSandboxStore, JobsConfigSchema, type JobsConfig } from './config-schema.ts';
export type { AgentSiteConfig, PilotFactoryConfig } from './agent-site-schema.ts';
export type { SlurmSiteConfig } from './slurm-site-schema.ts';
export { jobsMigrations } from './migrations.ts';
export { IfNoneMatch, JidParams } from './api-schemas.ts';
export { JobParameterEvent, JobStatusEvent } from './event-schemas.ts';
export { changeStatus, confirmKill, handOver } from './state-machine.ts';
export { runnableJobs, type ClaimedJob } from './lifecycle/claim.ts';
export { Matcher } from './matching/matcher.ts';
export { registryShareOf } from './matching/group-share.ts';
export { waitingFor } from './matching/demand.ts';
export { EXECUTOR_HELD, heldByOthers, jobsHeldAt, keepOutputOfEndedRun, noLongerHeld, recordRunRef, renewLeases, takeOver, unconfirmedKills, type HeldJob } from './lifecycle/holding.ts';
export { RescheduleLimit, requeueHeld } from './lifecycle/reschedule.ts';
export { endFailedRun, runEndSettings, type RunEndSettings } from './lifecycle/run-end.ts';
export { AGENT_HELD, endPulledRun, pulledRun, recordHeartbeats, recordOutputSandbox, reportPulledRun, statusOf, type PulledRun, type PullHolder } from './lifecycle/pulled-runs.ts';
export { heardSince, statusesOf } from './lifecycle/pulled-runs.ts';
export { detectStalls } from './lifecycle/stalls.ts';
export { JobEvents } from './lifecycle/job-events.ts';
export { splitArguments } from './arguments.ts';
export { sandboxStore } from './sandboxes.ts';
export { sandboxAdminCommand } from './sandbox-admin-cli.ts';
export { SandboxUploads, type Announced } from './sandbox-uploads.ts';
export { answerSandbox } from './sandbox-routes.ts';
export { PresignedDownload, RedirectHeaders, SandboxExists, SandboxUpload } from './sandbox-api-schemas.ts';
export { jobTokens } from './job-tokens.ts';
export { storeOutputTail } from './peek.ts';
