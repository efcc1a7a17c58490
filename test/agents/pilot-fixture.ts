/**
 * A service with the pilot registry's sites and users, and pilots written through the registry's store,
 * for the registry's API, CLI and web suites. Users: alice (plain), bob (SiteManager), admin
 * (JobAdministrator), pilot (Pilot), carol (owner of a manual pilot).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestService, testRegistry, type TestService } from '../helpers/service.ts';
import type { TestDialect } from '../helpers/dialects.ts';
import { insertPilot, recordPilotJobs, setPilotState } from '../../src/agents/pilots/store.ts';
import { pilotAgentId } from '../../src/agents/pilots/release.ts';
import { PilotState } from '../../src/agents/pilots/states.ts';

export const STAGING = 'pilot-staging-test';

export const PILOT_SITES = [
  { name: 'Local', type: 'local', slots: 1 },
  { name: 'Pool', type: 'agents' },
  // A factory that never gets to run in these suites: an hour between rounds, no Slurm commands.
  { name: 'Batch', type: 'agents', factory: { type: 'slurm', owner: 'pilot', intervalMs: 3600000, binDir: '/nonexistent/slurm', stagingDir: STAGING, maxWaiting: 0, maxPilots: 0 } },
];

export function pilotsRegistry() {
  const registry = testRegistry();
  return { ...registry, groups: [...registry.groups, { name: 'dirigo_sites', members: ['bob'], properties: ['SiteManager'] }] };
}

export function startPilotsService(dialect: TestDialect, config: Record<string, unknown> = {}): Promise<TestService> {
  return startTestService({ dialect, config: { registry: pilotsRegistry(), jobs: { sites: PILOT_SITES, scheduler: { pollIntervalMs: 50 } }, ...config } });
}

export interface PilotFixture {
  /** Pool, manual, Running, agent pilot-<id>, owner pilot. */
  running: number;
  /** Pool, manual, Running, owner carol. */
  carols: number;
  /** Batch, factory, Waiting, batch 1001, no output yet. */
  waiting: number;
  /** Batch, factory, Done, batch 1002, its log read. */
  done: number;
  /** Batch, factory, Running, batch 1003, a live output file. */
  live: number;
  /** Pool, manual, Failed. */
  failed: number;
}

/** Six pilots, oldest first in the order of PilotFixture's keys. */
export async function insertPilots(svc: TestService): Promise<PilotFixture> {
  const db = svc.ctx.db;
  const running = await insertPilot(db, { resource: '', reason: '', site: 'Pool', origin: 'manual', owner: 'pilot', state: PilotState.Running, slots: 2, cores: 2, memory_mb: 4000, gpus: 0, cpu_time: 3600 });
  await db.updateTable('pilots').set({ agent_id: pilotAgentId(running) }).where('pilot_id', '=', running).execute();
  const carols = await insertPilot(db, { resource: '', reason: '', site: 'Pool', origin: 'manual', owner: 'carol', state: PilotState.Running, agent_id: 'carols-agent' });
  const waiting = await insertPilot(db, { reason: '', site: 'Batch', resource: 'debug', origin: 'factory', owner: 'pilot', batch_ref: '1001' });
  await setPilotState(db, waiting, PilotState.Waiting, 'PENDING');
  const done = await insertPilot(db, { reason: '', site: 'Batch', resource: 'debug', origin: 'factory', owner: 'pilot', batch_ref: '1002', log: 'pilot 1002 says goodbye\n' });
  await setPilotState(db, done, PilotState.Running, 'RUNNING');
  await setPilotState(db, done, PilotState.Done, 'no work left');
  const live = await insertPilot(db, { reason: '', site: 'Batch', resource: 'debug', origin: 'factory', owner: 'pilot', batch_ref: '1003' });
  await setPilotState(db, live, PilotState.Running, 'RUNNING');
  mkdirSync(join(svc.dataDir, STAGING, String(live)), { recursive: true });
  writeFileSync(join(svc.dataDir, STAGING, String(live), 'pilot.log'), 'live output line 1\nlive output line 2\n');
  const failed = await insertPilot(db, { resource: '', reason: '', site: 'Pool', origin: 'manual', owner: 'pilot' });
  await setPilotState(db, failed, PilotState.Failed, 'agent crashed');
  await recordPilotJobs(db, done, [7, 8]);
  return { running, carols, waiting, done, live, failed };
}
