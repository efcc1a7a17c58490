/**
 * The batch script a Slurm site submits for a job. It runs on the compute node, in the job's staging
 * directory (shared with the Dirigo host): it unpacks the input sandbox into `work/`, runs `Executable`
 * with `Arguments` already split into words (each word single-quoted, so nothing is expanded: the payload
 * sees exactly the words the local executor would pass), with a clean environment, StdOutput/StdError
 * captured, and writes its exit record (`exit`, atomically) before leaving with the payload's code.
 * The Dirigo host then packs the output sandbox from `work/`, as the local executor does.
 */
import { shellQuote } from '../payload/shell-quote.ts';

export interface BatchScriptInput {
  jobId: number;
  site: string;
  executable: string;
  argv: readonly string[];
  environment: Readonly<Record<string, string>>;
  stdout: string;
  stderr: string;
  /** Whether `input.tar.gz` sits beside the script. */
  hasInput: boolean;
  /** Instead: where the script downloads it from (a presigned GET) and the sha256 it must have. */
  fetchInput?: { url: string; sha256: string } | undefined;
  /** The folder beside the script that holds the `dirigo` command (cli-on-path.ts), put first in PATH. */
  cliFolder?: string;
}

const PATH = '/usr/local/bin:/usr/bin:/bin';

/** The script's text; it expects to start in the staging directory (`sbatch --chdir`). */
export function batchScript(input: BatchScriptInput): string {
  const { PATH: payloadPath, ...rest } = {
    PATH,
    LANG: 'C.UTF-8',
    ...input.environment,
    DIRIGO_JOB_ID: String(input.jobId),
    DIRIGO_SITE: input.site,
  };
  // The `dirigo` folder comes first in the payload's PATH, whatever PATH its manifest sets; it is found
  // from the staging directory as the compute node sees it.
  const cli = input.cliFolder ? `"$stage"/${shellQuote(input.cliFolder)}:` : '';
  const env = [`PATH=${cli}${shellQuote(payloadPath)}`, ...Object.entries(rest).map(([k, v]) => shellQuote(`${k}=${v}`))];
  const lines = [
    '#!/bin/bash',
    `# Dirigo job ${input.jobId} on site ${input.site}; generated, do not edit.`,
    'stage=$(pwd -P)',
    `export PATH=${cli}${PATH}`,
    'work="$stage/work"',
    'record() { printf "%s\\n" "$1" > "$stage/exit.tmp" && mv -f "$stage/exit.tmp" "$stage/exit"; }',
    'mkdir -p "$work" && cd "$work" || { record "setup-failed cannot create the working directory"; exit 1; }',
    `exec >/dev/null 2>>"$stage/script.err"`,
    `: > ${shellQuote(input.stdout)} && : > ${shellQuote(input.stderr)} || { record "setup-failed cannot create StdOutput/StdError"; exit 1; }`,
  ];
  if (input.fetchInput) {
    // The compute node fetches the sandbox itself (no shared copy); bytes other than the sandbox's are never unpacked.
    const { url, sha256 } = input.fetchInput;
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
    lines.push(
      `curl -fsS --retry 3 --connect-timeout 30 -o "$stage/input.tar.gz" ${shellQuote(url)} || { record "setup-failed the input sandbox could not be downloaded from the store"; exit 1; }`,
      `printf '%s  %s\\n' ${sha256} "$stage/input.tar.gz" | sha256sum -c --status - || { record "setup-failed the input sandbox does not match its sha256"; exit 1; }`,
    );
  }
  if (input.hasInput || input.fetchInput) {
    // GNU tar refuses `..` members and strips leading slashes; owners and modes are not taken from the archive.
    lines.push('tar --no-same-owner --no-same-permissions -xzf "$stage/input.tar.gz" || { record "setup-failed the input sandbox could not be unpacked"; exit 1; }');
  }
  // A bare name that the input sandbox holds runs from the working directory, otherwise PATH finds it.
  lines.push(`exe=${shellQuote(input.executable)}`);
  if (!input.executable.includes('/')) {
    lines.push('if [ -f "./$exe" ] && [ ! -L "./$exe" ]; then chmod u+x "./$exe"; exe="$work/$exe"; fi');
  }
  lines.push(
    `env -i HOME="$work" TMPDIR="$work" ${env.join(' ')} "$exe"${input.argv.map((a) => ` ${shellQuote(a)}`).join('')} </dev/null >>${shellQuote(input.stdout)} 2>>${shellQuote(input.stderr)} &`,
    'child=$!',
    // Slurm's scancel/time limit sends SIGTERM to the batch shell: pass it on to the payload.
    'trap \'kill -TERM "$child" 2>/dev/null\' TERM INT',
    'wait "$child"; rc=$?',
    // `wait` returns early when a trapped signal arrives; wait again for the real end.
    'while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done',
    'if [ "$rc" = 127 ] && [ ! -x "$exe" ] && ! command -v -- "$exe" >/dev/null 2>&1; then record "not-found"; exit 127; fi',
    // The payload's CPU as this shell waited for it (children's user and system time), for when sacct has nothing.
    '{ times > "$stage/usage.tmp" && mv -f "$stage/usage.tmp" "$stage/usage"; } 2>/dev/null',
    'record "exit $rc"',
    'exit "$rc"',
  );
  return lines.join('\n') + '\n';
}

/** The exit record the script leaves: the payload's code, or why it did not start. */
export type ExitRecord = { kind: 'exit'; code: number } | { kind: 'not-found' } | { kind: 'setup-failed'; why: string };

export function parseExitRecord(text: string): ExitRecord | undefined {
  const line = text.trim();
  const exit = /^exit (\d{1,3})$/.exec(line);
  if (exit) return { kind: 'exit', code: Number(exit[1]) };
  if (line === 'not-found') return { kind: 'not-found' };
  const setup = /^setup-failed (.*)$/.exec(line);
  if (setup) return { kind: 'setup-failed', why: setup[1]! };
  return undefined;
}
