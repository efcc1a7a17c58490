/**
 * The job events stream (GET /jobs/events, Server-Sent Events) read with fetch rather than EventSource,
 * so that the token travels in the Authorization header and never in a URL. Reconnects with
 * Last-Event-ID after a break, as EventSource would.
 */
import type { components } from '@dirigo/client/schema';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { authorizedFetch } from '../api.ts';

// The event data as the API document describes it (packages/client generates the types).
export type StatusEvent = components['schemas']['JobStatusEvent'];
export type ParameterEvent = components['schemas']['JobParameterEvent'];

export interface JobEventHandlers {
  status(event: StatusEvent): void;
  parameter?(event: ParameterEvent): void;
  /** The server could not replay what was missed: reload the view. */
  reset?(): void;
  connected?(live: boolean): void;
}

/** Follows the events of the jobs matching `query` (GET /jobs restrictions) until the signal aborts. */
export function followJobEvents(query: URLSearchParams, handlers: JobEventHandlers, signal: AbortSignal): void {
  let lastId: string | undefined;
  const run = async (): Promise<void> => {
    while (!signal.aborted) {
      try {
        const headers: Record<string, string> = { accept: 'text/event-stream' };
        if (lastId) headers['last-event-id'] = lastId;
        const res = await authorizedFetch(new Request(`/jobs/events?${query.toString()}`, { headers, signal }));
        if (!res.ok || !res.body) throw new Error(`events answered ${res.status}`);
        handlers.connected?.(true);
        const events = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
        for await (const e of events) {
          if (e.id) lastId = e.id;
          if (e.event === 'status') handlers.status(JSON.parse(e.data) as StatusEvent);
          else if (e.event === 'parameter') handlers.parameter?.(JSON.parse(e.data) as ParameterEvent);
          else if (e.event === 'reset') handlers.reset?.();
        }
      } catch {
        if (signal.aborted) return;
      }
      handlers.connected?.(false);
      await new Promise((r) => setTimeout(r, 2_000));
    }
  };
  void run();
}
