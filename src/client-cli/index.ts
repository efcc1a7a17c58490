/**
 * The client side of `dirigo`: the commands that speak to a service over HTTPS (jobs, workflows, catalogue,
 * login, token, proxy) and the worker-node agent. Only the command dispatcher (src/app/cli/main.ts)
 * imports this tree; what it may import is the `client-cli-*` rules of .dependency-cruiser.cjs.
 */
export { jobsCommand } from './jobs/cli.ts';
export { jobCommand } from './jobs/job-cli.ts';
export { catalogueCommand } from './catalogue/cli.ts';
export { loginCommand, logoutCommand, whoamiCommand } from './auth/cli.ts';
export { tokenCommand } from './auth/token-cli.ts';
export { agentCommand } from './agent/cli.ts';
export { proxyCommand } from './pki/cli.ts';
export { sitesCommand } from './sites/cli.ts';
export { pilotsCommand } from './pilots/cli.ts';
export { registryCommand } from './registry/cli.ts';
export { workflowCommand } from './workflows/cli.ts';
export { accountingCommand } from './accounting/cli.ts';
