/** An event stream read by curl (-N, no buffering), as a grid user's shell script would follow it. */
import { spawn } from 'node:child_process';
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface CurlStream {
  events: EventSourceMessage[];
  /** Everything received, comments included. */
  raw(): string;
  /** The first event (from the start) that `match` accepts. */
  waitFor(match: (e: EventSourceMessage) => boolean, timeoutMs?: number): Promise<EventSourceMessage>;
  close(): void;
}

export function curlStream(url: string, caFile: string, headers: Record<string, string>): CurlStream {
  const args = ['-sN', '--cacert', caFile, ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]), url];
  const child = spawn('curl', args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const events: EventSourceMessage[] = [];
  let raw = '';
  const waiters = new Set<() => void>();
  const parser = createParser({
    onEvent: (e) => {
      events.push(e);
      for (const w of waiters) w();
    },
  });
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    raw += chunk;
    parser.feed(chunk);
  });
  return {
    events,
    raw: () => raw,
    waitFor(match, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(match);
          if (!found) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no such event within ${timeoutMs} ms; received:\n${raw.slice(-2000)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => child.kill(),
  };
}

/** The parsed data of an event. */
export function dataOf(e: EventSourceMessage): Record<string, unknown> {
  return JSON.parse(e.data) as Record<string, unknown>;
}
