/** Pull-mode agents: the /agents routes that hand out jobs (the agent a worker node runs is src/client-cli/agent/). */
export { agentsRoutes } from './routes/index.ts';
export { startAgentDuties } from './duties.ts';
export { agentsMigrations } from './presence.ts';
export { pilotsMigrations } from './pilots/migrations.ts';
export { startPilotFactory } from './factory/index.ts';
