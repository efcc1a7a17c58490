/** CLI errors, exit codes and progress: a spinner line on a terminal, plain lines otherwise. */

/** The exit codes of every command (README "Exit codes"). */
export const EXIT = {
  ok: 0,
  /** Anything else that failed: a refused request (other 4xx), a job that ended other than Done. */
  failure: 1,
  usage: 2,
  timeout: 3,
  notFound: 4,
  /** Not authenticated, or not allowed (401, 403). */
  forbidden: 5,
  /** The service failed (5xx) or could not be reached. */
  server: 6,
} as const;

/** The exit code for an HTTP error status. */
export function exitCodeFor(status: number): number {
  if (status === 401 || status === 403) return EXIT.forbidden;
  if (status === 404) return EXIT.notFound;
  if (status >= 500) return EXIT.server;
  return EXIT.failure;
}

export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

export interface Progress {
  update(text: string): void;
  done(text: string): void;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * Progress on stderr: redrawn in place on a TTY; otherwise one line per update, at most one each
 * `plainEveryMs` (the first at once), so that a log file is not filled with a countdown.
 */
export function progress(options: { plainEveryMs?: number } = {}, stream: NodeJS.WriteStream = process.stderr): Progress {
  const every = options.plainEveryMs ?? 1000;
  let frame = 0;
  let lastPlain = -Infinity;
  return {
    update(text) {
      if (stream.isTTY) {
        stream.write(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${text}`);
      } else if (Date.now() - lastPlain >= every) {
        lastPlain = Date.now();
        stream.write(`${text}\n`);
      }
    },
    done(text) {
      stream.write(stream.isTTY ? `\r\x1b[2K${text}\n` : `${text}\n`);
    },
  };
}
