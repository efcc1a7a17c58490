/**
 * A factory pilot's batch script (docs/pilots.md): it exports the pilot's secret and replaces itself with
 * `dirigo agent` in pilot mode, so that Slurm's signals (scancel, the time limit) reach the agent itself.
 * Every word is single-quoted: nothing in it is expanded by the shell on the worker node.
 */
import { shellQuote } from '../../payload/shell-quote.ts';

/** What the agent of one pilot is told. */
export interface PilotAgentInput {
  url: string;
  /** The CA file the agent trusts the service with; the system's CAs when absent. */
  ca?: string | undefined;
  site: string;
  pilotId: number;
  slots: number;
  cores: number;
  /** MB; the agent measures its node when absent. */
  memoryMb?: number | undefined;
  gpus: number;
  /** Seconds it may run jobs from its start. */
  cpuTime: number;
  idleTimeoutSeconds: number;
  /** The partition ('' for Slurm's default: the agent names its node then). */
  resource: string;
  workDir: string;
}

/** The arguments after `dirigo`. */
export function agentArguments(a: PilotAgentInput): string[] {
  const argv = ['agent', '--url', a.url];
  if (a.ca) argv.push('--ca', a.ca);
  argv.push('--site', a.site, '--pilot-id', String(a.pilotId), '--slots', String(a.slots), '--cores', String(a.cores));
  if (a.memoryMb !== undefined) argv.push('--memory', String(a.memoryMb));
  argv.push('--gpus', String(a.gpus), '--cpu-time', String(a.cpuTime), '--idle-timeout', String(a.idleTimeoutSeconds));
  if (a.resource) argv.push('--resource', a.resource);
  argv.push('--work-dir', a.workDir);
  return argv;
}

/**
 * The seconds a pilot offers jobs out of its wall-clock limit: a margin (a tenth, at most two minutes)
 * is kept for the agent to report its jobs and its end before Slurm stops it.
 */
export function pilotCpuTime(timeLimitSeconds: number): number {
  return timeLimitSeconds - Math.min(120, Math.ceil(timeLimitSeconds / 10));
}

export interface PilotScriptInput {
  pilotId: number;
  site: string;
  secret: string;
  agent: PilotAgentInput;
  /** The folder holding this software's `dirigo` (cli-on-path.ts), first in PATH; PATH's `dirigo` when absent. */
  cliFolder?: string | undefined;
}

const PATH = '/usr/local/bin:/usr/bin:/bin';

export function pilotScript(input: PilotScriptInput): string {
  const path = input.cliFolder ? `${shellQuote(input.cliFolder)}:${PATH}` : `"$PATH":${PATH}`;
  return [
    '#!/bin/bash',
    `# Dirigo pilot ${input.pilotId} of site ${input.site}; generated, do not edit. Its secret is good for this pilot only.`,
    `export DIRIGO_PILOT_SECRET=${shellQuote(input.secret)}`,
    `export PATH=${path}`,
    `mkdir -p ${shellQuote(input.agent.workDir)} || exit 1`,
    `exec dirigo ${agentArguments(input.agent).map(shellQuote).join(' ')}`,
    '',
  ].join('\n');
}
