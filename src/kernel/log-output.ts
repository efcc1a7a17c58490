/**
 * The log's way to standard output: lines gathered in memory and written with one system call per
 * MIN_CHARS or more (a dozen access lines and up), at once when the process exits, and within FLUSH_MS
 * when the service is quiet (a kill -9 loses at most that much). Written synchronously, as pino does by
 * default: asynchronous writes cost a thread-pool round trip each.
 *
 * Ours rather than pino.destination (sonic-boom) because every request writes a line: sonic-boom
 * measures the byte length of its whole pending buffer on each line (flattening and scanning a string
 * that grows to the buffer's size every time), which made it the access line's largest cost. Here a line
 * is pushed to an array, and the array is joined once per write.
 */
import { writeSync } from 'node:fs';

/** How long a log line may wait in the buffer when the service is quiet. */
const FLUSH_MS = 250;
/** Characters gathered before a write (bytes for the ASCII of log lines). */
const MIN_CHARS = 8192;
const pause = new Int32Array(new SharedArrayBuffer(4));

export class BufferedOutput {
  readonly #fd: number;
  #lines: string[] = [];
  #chars = 0;

  constructor(fd: number) {
    this.#fd = fd;
    setInterval(() => this.flushSync(), FLUSH_MS).unref();
    process.once('exit', () => this.flushSync());
  }

  /** pino's destination interface: one serialised line, newline included. */
  write(line: string): boolean {
    this.#lines.push(line);
    this.#chars += line.length;
    if (this.#chars >= MIN_CHARS) this.flushSync();
    return true;
  }

  flush(callback?: (err?: Error) => void): void {
    this.flushSync();
    callback?.();
  }

  flushSync(): void {
    if (this.#lines.length === 0) return;
    const bytes = Buffer.from(this.#lines.join(''), 'utf8');
    this.#lines = [];
    this.#chars = 0;
    let written = 0;
    while (written < bytes.length) {
      try {
        written += writeSync(this.#fd, bytes, written);
      } catch (err) {
        // A pipe that is full for now (standard output set non-blocking): wait a millisecond and go on.
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') {
          Atomics.wait(pause, 0, 0, 1);
          continue;
        }
        // Gone (EPIPE, a closed terminal): logging never stops the service; these lines are lost.
        return;
      }
    }
  }
}
