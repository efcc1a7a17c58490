/**
 * `dirigo job report`: run inside a job, it reports to the service with the job's own token
 * (DIRIGO_JOB_TOKEN), as DIRAC's job wrapper reports for its payload: an ApplicationStatus, job
 * parameters, or just a heartbeat.
 */
import { parseArgs } from 'node:util';
import { environment } from '../../kernel/config.ts';
import { answer, api, connect } from '../shared/http.ts';
import { CliError, EXIT } from '../../terminal/output.ts';
import { unknownWord } from '../../terminal/suggest.ts';
import { JOBS_COMMANDS, jobsCommand } from './cli.ts';

const USAGE = `usage: dirigo job report [--status TEXT] [--param NAME=VALUE]... [--json]
       dirigo job <command> ...   any 'dirigo jobs' command (submit, list, show, kill, ...), as DIRAC's singular

Run inside a job: reports to the service with the job's token. Every report is also a heartbeat.
  --status TEXT        set the job's ApplicationStatus ('step 2/5')
  --param NAME=VALUE   set a job parameter, shown by 'dirigo jobs show' (repeatable)

The job's environment gives DIRIGO_JOB_ID, DIRIGO_JOB_TOKEN, DIRIGO_URL and DIRIGO_CA.
The answer names the job's status: a job told Killed should stop (exit code 1).

example:
  dirigo job report --status "step 2/5" --param events=12000
`;

const OPTIONS = {
  status: { type: 'string' },
  param: { type: 'string', multiple: true },
  url: { type: 'string' },
  ca: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function jobCommand(argv: string[]): Promise<number> {
  // DIRAC's commands are singular (dirac-wms-job-submit): `dirigo job submit` is `dirigo jobs submit`.
  if ((JOBS_COMMANDS as readonly string[]).includes(argv[0] ?? '')) return jobsCommand(argv);
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const [sub] = positionals;
  if (values.help || !sub) {
    process.stdout.write(USAGE);
    return sub || values.help ? EXIT.ok : EXIT.usage;
  }
  if (sub !== 'report') throw new CliError(`${unknownWord('job command', sub, ['report', ...JOBS_COMMANDS])}\n\n${USAGE}`, EXIT.usage);
  const token = environment.get('DIRIGO_JOB_TOKEN');
  const jid = Number(environment.get('DIRIGO_JOB_ID'));
  if (!token || !Number.isSafeInteger(jid) || jid < 1) throw new CliError('dirigo job report runs inside a job: DIRIGO_JOB_ID and DIRIGO_JOB_TOKEN are not set', EXIT.usage);
  const parameters: Record<string, string> = {};
  for (const p of values.param ?? []) {
    const eq = p.indexOf('=');
    if (eq < 1) throw new CliError(`--param takes NAME=VALUE, not '${p}'`, EXIT.usage);
    parameters[p.slice(0, eq)] = p.slice(eq + 1);
  }
  const body = { ...(values.status !== undefined ? { ApplicationStatus: values.status } : {}), ...(values.param ? { Parameters: parameters } : {}) };
  // The token is the job's: never a certificate or token of the user who happens to run the command.
  const conn = connect({ ...values, token });
  const reply = await answer(conn, api(conn, token).POST('/jobs/{jid}/report', { params: { path: { jid } }, body }));
  process.stdout.write(values.json ? `${JSON.stringify(reply)}\n` : `job ${reply.jid}: ${reply.Status}\n`);
  return reply.Status === 'Killed' ? EXIT.failure : EXIT.ok;
}
