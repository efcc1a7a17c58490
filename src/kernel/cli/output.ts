/** CLI errors and progress: a spinner line on a terminal, plain lines otherwise. */
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

/** Progress on stderr: redrawn in place on a TTY, one line per update (at most once a second) otherwise. */
export function progress(stream: NodeJS.WriteStream = process.stderr): Progress {
  let frame = 0;
  let lastPlain = 0;
  return {
    update(text) {
      if (stream.isTTY) {
        stream.write(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${text}`);
      } else if (Date.now() - lastPlain >= 1000) {
        lastPlain = Date.now();
        stream.write(`${text}\n`);
      }
    },
    done(text) {
      stream.write(stream.isTTY ? `\r\x1b[2K${text}\n` : `${text}\n`);
    },
  };
}
