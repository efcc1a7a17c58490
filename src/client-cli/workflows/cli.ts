/**
 * `dirigo workflow ...`: several job descriptions with names and dependencies submitted as one
 * (docs/workflows.md), listed, watched until they end, and killed, held or released as one.
 */
import { parseArgs } from 'node:util';
import { answer, api, connect } from '../shared/http.ts';
import { CREDENTIAL_OPTIONS, userAccessToken } from '../shared/credentials.ts';
import { CliError, EXIT } from '../../terminal/output.ts';
import { unknownWord } from '../../terminal/suggest.ts';
import { reportRefusals } from '../jobs/action-results.ts';
import { formatActed, formatList, formatSubmitted, formatWorkflow, type Workflow } from './format.ts';
import { submitWorkflow, workflowRequest } from './submit.ts';
import { watchWorkflow } from './watch.ts';

const USAGE = `usage: dirigo workflow submit FILE.json [FILES...] [--name N] [--max-running N] [--hold] [--json]
       dirigo workflow submit NODE.jdl... [FILES...] [--name N] [--max-running N] [--hold] [--json]
       dirigo workflow status WID [--watch [--timeout SECONDS]] [--jobs] [--json]
       dirigo workflow list [--owner USER] [--max N] [--json]
       dirigo workflow kill|hold|release WID [--json]

commands:
  submit    one workflow in one request, all of it or nothing: a JSON file ({"Name", "MaxRunning",
            "Jobs": [job descriptions with NodeName and DependsOn]}) or the JDL files of its nodes, each
            named by its NodeName or JobName; FILES join the input sandbox, as do the files a JDL's
            InputSandbox names beside it. Prints the WorkflowID and each node's job ids.
            --name and --max-running set the workflow's Name and MaxRunning (at most N of its jobs
            active at once); --hold submits every job held until 'release'
  status    the workflow's Status (Active until every job ended, then Done, Failed or Killed) and each
            node's jobs counted per status, with why Received ones wait (HELD); --jobs lists every job;
            --watch follows it until it ends: redrawn on a terminal, a line per change otherwise
            (exit 0 when it ends Done, 1 otherwise, 3 after --timeout)
  list      your workflows, newest first (--owner USER: another user's, for a JobAdministrator)
  kill      kill every job of the workflow that has not ended, held ones too
  hold      hold its jobs that wait: they stay Received and never match until 'release'
  release   release its held jobs: they wait again, or for their dependencies

Dependencies (DependsOn names nodes, or job ids; DependencyType afterok, afterany or afternotok),
retries (MaxRetries, RetryExitCodes) and holds (Hold, OnExitHold) are job description keys: docs/workflows.md.
Exit codes: 1 failed (a refused request or job), 2 usage, 3 timeout, 4 not found, 5 not allowed, 6 service error.

authentication (one of):
  --cert FILE --key FILE [--group G]   a user certificate or proxy (flow A)
  --token TOKEN | DIRIGO_TOKEN=...     an access token
  (none)                               the token cached by 'dirigo login'
connection: --url URL (or DIRIGO_URL), --ca FILE (or DIRIGO_CA); --json prints raw JSON

examples:
  dirigo workflow submit mc.json sim.sh reco.sh merge.sh --max-running 3
  dirigo workflow submit simulate.jdl reconstruct.jdl merge.jdl --name mc-2026
  dirigo workflow status 7 --watch
  dirigo workflow kill 7
`;

const COMMANDS = ['submit', 'status', 'list', 'kill', 'hold', 'release'] as const;

const OPTIONS = {
  ...CREDENTIAL_OPTIONS,
  json: { type: 'boolean' },
  name: { type: 'string' },
  'max-running': { type: 'string' },
  hold: { type: 'boolean' },
  watch: { type: 'boolean' },
  jobs: { type: 'boolean' },
  timeout: { type: 'string' },
  owner: { type: 'string' },
  max: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function positive(what: string, text: string): number {
  const n = Number(text);
  if (!/^[1-9][0-9]{0,15}$/.test(text) || !Number.isSafeInteger(n)) throw new CliError(`${what} takes a positive integer, not '${text}'`, EXIT.usage);
  return n;
}

/** The one WorkflowID a command takes. */
function workflowId(sub: string, args: readonly string[]): number {
  if (args.length !== 1) throw new CliError(`${sub} takes one WorkflowID\n\n${USAGE}`, EXIT.usage);
  return positive('a WorkflowID', args[0]!);
}

export async function workflowCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const [sub, ...args] = positionals;
  if (values.help || !sub) {
    process.stdout.write(USAGE);
    return values.help ? EXIT.ok : EXIT.usage;
  }
  // Before signing in: a mistake is answered as one, not as a missing credential.
  if (!(COMMANDS as readonly string[]).includes(sub)) throw new CliError(`${unknownWord('workflow command', sub, COMMANDS)}\n\n${USAGE}`, EXIT.usage);
  const maxRunning = values['max-running'] === undefined ? undefined : positive('--max-running', values['max-running']);
  const max = values.max === undefined ? undefined : positive('--max', values.max);
  const timeoutMs = values.timeout === undefined ? Infinity : Number(values.timeout) * 1000;
  if (Number.isNaN(timeoutMs) || timeoutMs < 0) throw new CliError('--timeout takes seconds', EXIT.usage);
  if (sub !== 'submit' && (values.name !== undefined || maxRunning !== undefined || values.hold)) throw new CliError('--name, --max-running and --hold are options of workflow submit', EXIT.usage);
  if ((values.watch || values.timeout !== undefined || values.jobs) && sub !== 'status') throw new CliError('--watch, --timeout and --jobs are options of workflow status', EXIT.usage);
  if (values.timeout !== undefined && !values.watch) throw new CliError('--timeout goes with --watch', EXIT.usage);
  if ((values.owner !== undefined || max !== undefined) && sub !== 'list') throw new CliError('--owner and --max are options of workflow list', EXIT.usage);
  if (sub === 'list' && args.length > 0) throw new CliError(`unexpected arguments: ${args.join(' ')}`, EXIT.usage);
  const wid = sub === 'submit' || sub === 'list' ? 0 : workflowId(sub, args);
  const request = sub === 'submit' ? await workflowRequest(args, { name: values.name, maxRunning, hold: values.hold ?? false }) : undefined;

  const conn = connect(values);
  const token = await userAccessToken(conn, values);
  const client = api(conn, token);
  const print = (data: unknown, text: () => string) => process.stdout.write(values.json ? `${JSON.stringify(data, null, 2)}\n` : text());
  switch (sub) {
    case 'submit': {
      const submitted = await submitWorkflow(conn, token, request!, values.json ?? false);
      print(submitted, () => formatSubmitted(submitted));
      return EXIT.ok;
    }
    case 'status': {
      const jobs = values.jobs ?? false;
      if (values.watch) return watchWorkflow(conn, { token, renew: () => userAccessToken(conn, values) }, wid, { json: values.json ?? false, jobs, timeoutMs });
      const w = (await answer(conn, client.GET('/workflows/{wid}', { params: { path: { wid } } }))) as Workflow;
      print(w, () => formatWorkflow(w, { jobs }));
      return EXIT.ok;
    }
    case 'list': {
      const query = { ...(values.owner !== undefined ? { owner: values.owner } : {}), ...(max !== undefined ? { maxItems: max } : {}) };
      const list = await answer(conn, client.GET('/workflows', { params: { query } }));
      print(list, () => formatList(list));
      return EXIT.ok;
    }
    default: {
      const action = sub as 'kill' | 'hold' | 'release';
      const path = action === 'kill' ? '/workflows/{wid}/kill' : action === 'hold' ? '/workflows/{wid}/hold' : '/workflows/{wid}/release';
      const { results } = await answer(conn, client.POST(path, { params: { path: { wid } } }));
      print(results, () => formatActed(wid, action, results));
      return reportRefusals('workflow', results);
    }
  }
}
