/**
 * node:util parseArgs refusals, worded for a person: Node's own text for an unknown option advises a
 * `--` escape with an unbalanced quote, and says nothing of where the options are listed.
 */

/** Whether `err` is a parseArgs refusal (an unknown option, a missing or ambiguous value): a usage error. */
export function isParseArgsError(err: unknown): err is Error {
  return err instanceof Error && ((err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS_') ?? false);
}

/** The refusal in the CLI's words; `command` is what `--help` follows (`jobs`, `catalogue`). */
export function parseArgsMessage(err: Error, command: string): string {
  const unknown = /^Unknown option '([^']*)'/.exec(err.message);
  if (unknown) {
    const option = unknown[1]!;
    const escape = option.startsWith('-') ? ` (an argument that starts with '-' goes after '--': -- ${option})` : '';
    return `unknown option '${option}': 'dirigo ${command} --help' lists the options${escape}`;
  }
  return err.message;
}
