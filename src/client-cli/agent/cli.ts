/**
 * `dirigo agent --url URL --site NAME [--slots N]`: a pull-mode job agent for a worker node (a batch job,
 * a cloud VM, a Kubernetes pod), acting as a pilot (docs/pilots.md). A factory pilot (`--pilot-id`)
 * exchanges its secret for pilot tokens; a hand-started agent registers with a robot credential (a
 * certificate, flow A, or a token of a group with the Pilot property). It then takes and runs jobs of its
 * site until stopped (SIGTERM/SIGINT, the service's drain or stop), until no job is left (--once), or
 * until it had no work for --idle-timeout; it reports its end to the registry.
 */
import { availableParallelism, hostname, tmpdir } from 'node:os';
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { connect, CONNECTION_OPTIONS } from '../shared/http.ts';
import { CliError } from '../../terminal/output.ts';
import { certificateToken } from '../shared/certificate-token.ts';
import { environment } from '../../kernel/config.ts';
import { JobAgent } from './agent.ts';
import { PilotSession, type PilotCredential } from './pilot.ts';
import { measuredCapacity, measuredPlatform } from '../../payload/machine.ts';
import { PLATFORM_PATTERN, REQUIREMENT_LIMITS, TAG_PATTERN } from '../../protocol/requirements.ts';

const USAGE = `usage: dirigo agent --url URL --site NAME [--slots N] [options]

Takes Waiting jobs of an agents site from the service and runs them on this machine, like the local
executor: each in its own working directory, without a shell, with CPUTime enforced. Sends heartbeats
(the service's kills, drain and stop commands arrive in their replies), uploads output sandboxes and
reports final statuses. The agent is a pilot of the service's registry: it acts with a short-lived pilot
token, and reports its end (Done, or Failed with why).

options:
  --site NAME          the agents site (type: agents in the service's jobs.sites)
  --slots N            jobs run at once (default: the number of CPUs)
  --work-dir DIR       working directories (default: a folder under the system temp dir)
  --once               exit once no job is waiting and every taken job has ended
  --poll SECONDS       pause between match requests while idle (default 2)
  --idle-timeout SECONDS  end once no job was matched for that long and none runs (default: never)
  --agent-id ID        ignored: a pilot's agent id is pilot-<PilotID>
what the node offers jobs (a job takes the cores it is given, and its MaxRAM and NumberOfGPUs, until it ends):
  --cores N            processors (default: the number of CPUs, or --slots when larger)
  --memory MB          memory in MB (default: the machine's)
  --gpus N             GPUs (default 0)
  --tag TAG            a tag jobs may require (Tags), repeatable
  --platform NAME      its platform (default: measured, e.g. Linux_x86_64_glibc-2.36)
  --resource NAME      its name in matching explanations (default: the host name)
  --cpu-time SECONDS   how long the agent may run jobs from its start (default: no limit)
authentication (one of):
  --pilot-id N         a pilot the service's factory submitted; its secret in DIRIGO_PILOT_SECRET
    [--pilot-secret-file FILE]                     or in that file
  --cert FILE --key FILE [--group G] [--setup S]   a robot certificate (flow A); the group needs the Pilot property
  --token TOKEN | DIRIGO_TOKEN=...                 a token of a group with the Pilot property
  With a robot credential the agent registers as a pilot (POST /pilots) and keeps its PilotID in its
  work directory: started again there, it goes on as the same pilot while that one lives.
connection: --url URL (or DIRIGO_URL), --ca FILE (or DIRIGO_CA)

example:
  dirigo agent --url https://dirigo.example.org --site Pool --slots 8 --cert robot.pem --group dirigo_pilot
`;

const MiB = 1024 * 1024;

export async function agentCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...CONNECTION_OPTIONS,
      site: { type: 'string' },
      slots: { type: 'string' },
      'work-dir': { type: 'string' },
      once: { type: 'boolean' },
      poll: { type: 'string' },
      'agent-id': { type: 'string' },
      cores: { type: 'string' },
      memory: { type: 'string' },
      gpus: { type: 'string' },
      tag: { type: 'string', multiple: true },
      platform: { type: 'string' },
      resource: { type: 'string' },
      'cpu-time': { type: 'string' },
      token: { type: 'string' },
      group: { type: 'string' },
      setup: { type: 'string' },
      'pilot-id': { type: 'string' },
      'pilot-secret-file': { type: 'string' },
      'idle-timeout': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!values.site) throw new CliError(`--site is required\n\n${USAGE}`, 2);
  const slots = values.slots === undefined ? availableParallelism() : Number(values.slots);
  if (!Number.isInteger(slots) || slots < 1 || slots > 1000) throw new CliError(`--slots must be an integer from 1 to 1000, not ${values.slots}`, 2);
  const poll = values.poll === undefined ? 2 : Number(values.poll);
  if (!Number.isFinite(poll) || poll < 0.01 || poll > 3600) throw new CliError(`--poll must be a number of seconds from 0.01 to 3600, not ${values.poll}`, 2);
  if (values['agent-id'] !== undefined && !/^[A-Za-z0-9_.-]{1,40}$/.test(values['agent-id'])) throw new CliError('--agent-id: 1 to 40 letters, digits, _ . -', 2);
  const machine = measuredCapacity();
  // At least --slots: an agent told to run more jobs than the node has CPUs keeps running that many 1-core jobs.
  const cores = integerOption('--cores', values.cores, Math.max(machine.cores, slots), 1, REQUIREMENT_LIMITS.processors);
  const memoryMb = integerOption('--memory', values.memory, machine.memoryMb, 1, REQUIREMENT_LIMITS.maxRamMb);
  const gpus = integerOption('--gpus', values.gpus, 0, 0, REQUIREMENT_LIMITS.gpus);
  const cpuTime = values['cpu-time'] === undefined ? undefined : integerOption('--cpu-time', values['cpu-time'], 0, 1, 2 ** 31 - 1);
  const tags = [...new Set(values.tag ?? [])].sort();
  const badTag = tags.find((t) => !TAG_PATTERN.test(t));
  if (badTag !== undefined) throw new CliError(`--tag ${JSON.stringify(badTag)}: letters, digits and _ . : + - (at most 64)`, 2);
  if (tags.length > REQUIREMENT_LIMITS.tags) throw new CliError(`--tag: at most ${REQUIREMENT_LIMITS.tags} tags`, 2);
  if (values.platform !== undefined && !PLATFORM_PATTERN.test(values.platform)) throw new CliError(`--platform ${JSON.stringify(values.platform)}: letters, digits and _ . + - (e.g. Linux_x86_64_glibc-2.36)`, 2);
  if (values.resource !== undefined && !/^[A-Za-z0-9_.-]{1,128}$/.test(values.resource)) throw new CliError('--resource: 1 to 128 letters, digits, _ . -', 2);
  // A host name outside the resource pattern (rare) is cut to what it allows.
  const resource = values.resource ?? (hostname().replace(/[^A-Za-z0-9_.-]/g, '-').slice(0, 128) || 'agent');

  const pilotId = values['pilot-id'] === undefined ? undefined : integerOption('--pilot-id', values['pilot-id'], 0, 1, 2 ** 31 - 1);
  const idleTimeout = values['idle-timeout'] === undefined ? undefined : integerOption('--idle-timeout', values['idle-timeout'], 0, 0, 30 * 86400);
  if (values['pilot-secret-file'] !== undefined && pilotId === undefined) throw new CliError('--pilot-secret-file goes with --pilot-id', 2);
  const workDir = resolve(values['work-dir'] ?? join(tmpdir(), `dirigo-agent-${process.pid}`));

  const conn = connect(values);
  const log = (line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`);
  let credential: PilotCredential;
  if (pilotId !== undefined) {
    credential = { secret: pilotSecret(values['pilot-secret-file']) };
  } else {
    const fixed = values.token ?? (conn.hasCertificate ? undefined : environment.get('DIRIGO_TOKEN'));
    if (!fixed && !conn.hasCertificate) throw new CliError('authentication is needed: --pilot-id (with DIRIGO_PILOT_SECRET), --cert/--key (a robot certificate) or --token / DIRIGO_TOKEN', 2);
    let cached: { token: string; renewAt: number } | undefined;
    const robot = async (refresh: boolean): Promise<string> => {
      if (fixed) return fixed;
      if (!refresh && cached && Date.now() < cached.renewAt) return cached.token;
      const answer = await certificateToken(conn, values.group, values.setup);
      // Renew at 80 % of the lifetime, well before it expires mid-request.
      cached = { token: answer.access_token, renewAt: Date.now() + answer.expires_in * 800 };
      return cached.token;
    };
    credential = { robot };
  }
  if (values['agent-id'] !== undefined) log(`--agent-id ${values['agent-id']} is ignored: a pilot's agent id is pilot-<PilotID>`);

  const session = new PilotSession({ url: conn.url, dispatcher: conn.agent, credential, log });
  try {
    await mkdir(workDir, { recursive: true, mode: 0o700 });
    if (pilotId !== undefined) await session.exchange(pilotId);
    else await session.register({ site: values.site, slots, cores, memoryMb, gpus, ...(cpuTime !== undefined ? { cpuTime } : {}) }, workDir);
  } catch (err) {
    await conn.agent.close();
    throw new CliError((err as Error).message);
  }

  const agent = new JobAgent({
    url: conn.url,
    site: values.site,
    slots,
    node: { resource, cores, memoryMb, gpus, tags, platform: values.platform ?? measuredPlatform(), ...(cpuTime !== undefined ? { cpuTime } : {}) },
    dispatcher: conn.agent,
    token: (refresh) => session.token(refresh),
    agentId: session.agentId,
    workDir,
    idlePollMs: Math.round(poll * 1000),
    ...(idleTimeout !== undefined ? { idleTimeoutMs: idleTimeout * 1000 } : {}),
    killGraceMs: 10000,
    limits: { maxFileSize: 100 * MiB, maxSandboxSize: 100 * MiB, maxFiles: 1000 },
    ...(values.ca ?? environment.get('DIRIGO_CA') ? { caFile: resolve((values.ca ?? environment.get('DIRIGO_CA'))!) } : {}),
    log,
  });
  let signalled = false;
  const stop = () => {
    signalled = true;
    void agent.stop();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  try {
    await agent.run(values.once ?? false);
    // A factory pilot ended by a signal was ended by its batch system (scancel, a node going down): its jobs
    // are given back, and it sends no final report, so that the factory marks it Lost with the batch
    // system's reason (docs/pilots.md). A hand-started agent stopped by its operator ends Done.
    if (signalled && values['pilot-id'] !== undefined) log(`pilot ${session.pilotId}: stopped by a signal; its batch system says how it ended`);
    else await session.end('Done', agent.endReason).catch((err: Error) => log(`pilot ${session.pilotId}: its final report failed: ${err.message}`));
  } catch (err) {
    await session.end('Failed', (err as Error).message).catch((e: Error) => log(`pilot ${session.pilotId}: its final report failed: ${e.message}`));
    throw new CliError((err as Error).message);
  } finally {
    process.removeListener('SIGTERM', stop);
    process.removeListener('SIGINT', stop);
    await conn.agent.close();
  }
  process.stderr.write(`agent ${agent.agentId}: ${agent.matched} job(s) taken, ${agent.finished} reported\n`);
  return 0;
}

/** An integer option from `min` to `max`, `fallback` when absent. */
function integerOption(name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < min || n > max) throw new CliError(`${name} must be an integer from ${min} to ${max}, not ${text}`, 2);
  return n;
}

/** A factory pilot's secret: the file's first line, or DIRIGO_PILOT_SECRET. */
function pilotSecret(file: string | undefined): string {
  let secret: string | undefined;
  if (file !== undefined) {
    try {
      secret = readFileSync(file, 'utf8').split('\n')[0]!.trim();
    } catch (err) {
      throw new CliError(`--pilot-secret-file ${file}: ${(err as Error).message}`, 2);
    }
  } else {
    secret = environment.get('DIRIGO_PILOT_SECRET');
  }
  if (!secret) throw new CliError('--pilot-id needs its secret: DIRIGO_PILOT_SECRET or --pilot-secret-file', 2);
  return secret;
}
