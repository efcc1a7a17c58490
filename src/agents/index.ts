/** Pull-mode agents: the /agents routes that hand out jobs, and the `dirigo agent` command. */
export { agentsRoutes } from './routes/index.ts';
export { agentCommand } from './cli.ts';
export { agentsMigrations } from './presence.ts';
