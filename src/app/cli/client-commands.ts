/**
 * The client's commands (they speak to a service over HTTPS, or run the worker-node agent): one table that
 * both the npm package's `dirigo` (main.ts) and the single executable (client-main.ts) dispatch to.
 */
import {
  accountingCommand,
  agentCommand,
  catalogueCommand,
  jobCommand,
  jobsCommand,
  loginCommand,
  logoutCommand,
  proxyCommand,
  sitesCommand,
  pilotsCommand,
  registryCommand,
  tokenCommand,
  whoamiCommand,
  workflowCommand,
} from '../../client-cli/index.ts';
import type { CommandTable } from './dispatch.ts';

export const clientCommands: CommandTable = {
  token: { run: tokenCommand, summary: 'obtain an access token with a certificate (flow A)' },
  jobs: { run: jobsCommand, summary: 'submit (JSON or JDL), list, summarise, show, kill, wait for jobs; fetch manifests and sandboxes' },
  job: { run: jobCommand, summary: "inside a job: report its ApplicationStatus, parameters and heartbeat with the job's token; otherwise as jobs" },
  workflow: { run: workflowCommand, summary: 'workflows (jobs with dependencies, submitted as one): submit, status [--watch], list, kill, hold, release' },
  catalogue: { run: catalogueCommand, summary: 'file catalogue: ls, stat, meta, search, find, fields, mkdir, register, setmeta, rm, import' },
  sites: { run: sitesCommand, summary: 'sites: status, banned resources and history; ban and unban (SiteManager, JobAdministrator)' },
  pilots: { run: pilotsCommand, summary: 'pilots of agents sites: list, summary, show, logs; drain, stop, revoke (SiteManager, JobAdministrator)' },
  accounting: { run: accountingCommand, summary: 'usage per time and group (jobs, wall, CPU hours, efficiency), the usage records, the queue history, the APEL summary' },
  registry: { run: registryCommand, summary: 'joining a VO: request a group, list, approve and reject requests (managers, Admin); read and accept the AUP' },
  agent: { run: agentCommand, summary: 'pull-mode job agent for a worker node (takes and runs jobs of an agents site)' },
  login: { run: loginCommand, summary: 'sign in with the device flow and cache the token (OAuth 2.0)' },
  logout: { run: logoutCommand, summary: 'revoke and forget the cached token' },
  whoami: { run: whoamiCommand, summary: 'show who your credential speaks for, and where it was found' },
  proxy: { run: proxyCommand, summary: 'RFC 3820 proxies: init, info, destroy (as grid-proxy-init/info/destroy)' },
};
