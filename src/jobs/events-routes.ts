/**
 * GET /jobs/events: the live job events as Server-Sent Events (the WHATWG HTML "Server-sent events"
 * format): `event: status` or `event: parameter`, an `id` to resume from with Last-Event-ID, and comment
 * heartbeats. Restrictions and visibility are those of GET /jobs.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requireCapability, requireToken, type Principal } from '../auth/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { InvalidRequest, ServiceUnavailable } from '../kernel/errors.ts';
import { errors, SECURITY } from '../kernel/openapi.ts';
import { EventsQuery } from './api-schemas.ts';
import type { JobsConfig } from './config-schema.ts';
import { EventHub, formatEventId, parseEventId, type JobEvent, type Subscriber } from './events.ts';
import { parseListQuery } from './list-query.ts';
import { listVisibility } from './privileges.ts';
import { onJobsChanged } from './state-machine.ts';

/** A stream whose client reads slower than this much is ended: it reconnects and resumes. */
const MAX_BUFFERED = 4 * 1024 * 1024;

function frame(event: JobEvent): string {
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

export function jobEventsRoute(app: FastifyInstance, ctx: AppContext, auth: ReturnType<typeof requireToken>): void {
  const config: JobsConfig['events'] = ctx.config.jobs.events;
  const hub = new EventHub(ctx.db, { pollMs: config.pollMs });
  const open = new Set<ServerResponse>();
  const unlisten = onJobsChanged(() => hub.wake());
  ctx.onClose(() => {
    unlisten();
    hub.close();
    for (const res of open) res.end();
  });

  app.get(
    '/jobs/events',
    {
      onRequest: auth,
      attachValidation: true,
      schema: {
        tags: ['Jobs'],
        security: SECURITY.token,
        operationId: 'jobEvents',
        summary: 'Live job events (Server-Sent Events): status, application status and parameter changes, with the restrictions of GET /jobs',
        description:
          'Each event has an id; a client that reconnects with Last-Event-ID (header, or the lastEventId parameter) first gets the events it missed within jobs.events.replayWindowMs, or a `reset` event when there were too many. The first event, `ready`, carries the position to resume from. Browsers, whose EventSource sends no Authorization header, may pass access_token in the query.',
        querystring: EventsQuery,
        headers: Type.Object({
          'last-event-id': Type.Optional(Type.String({ maxLength: 64, description: 'The id of the last event received: the stream resumes after it (the HTML Server-Sent Events reconnection header)' })),
        }),
        response: errors(400, 401, 403, 503),
        documented: {
          responses: {
            200: {
              description: 'An endless text/event-stream: `event: status` data {JobID, Status, MinorStatus, ApplicationStatus, Time, Source}; `event: parameter` data {JobID, Name, Value, Time}; `event: ready` and `event: reset`; comment lines as heartbeats',
              content: { 'text/event-stream': Type.String() },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const principal: Principal = request.principal!;
      requireCapability(principal, 'compute.read');
      const q = parseListQuery(request.url);
      const lastText = request.headers['last-event-id'] ?? new URLSearchParams(request.url.split('?')[1] ?? '').get('lastEventId') ?? undefined;
      const last = parseEventId(String(lastText ?? ''));
      if (lastText !== undefined && !last) throw new InvalidRequest(`Last-Event-ID: '${String(lastText).slice(0, 64)}' is not an id of this stream`);
      if (open.size >= config.maxSubscribers) throw new ServiceUnavailable(`this instance serves ${open.size} event streams already; try again later or another instance`);

      const res = reply.raw;
      reply.hijack();
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
      });
      open.add(res);
      let buffered: JobEvent[] | undefined = [];
      const write = (text: string) => {
        if (res.writableEnded) return;
        res.write(text);
        if (res.writableLength > MAX_BUFFERED) res.end();
      };
      const subscriber: Subscriber = {
        visibility: listVisibility(principal, q.allOwners),
        restrictions: q.restrictions,
        send: (event) => (buffered ? buffered.push(event) : write(frame(event))),
      };
      // The position, then at once the subscription: events after `now` arrive live, those before are replayed.
      // Live events are held while the missed ones are written, so that none is lost or sent out of order.
      const now = await hub.position();
      const unsubscribe = hub.subscribe(subscriber);
      const heartbeat = setInterval(() => write(': keepalive\n\n'), config.heartbeatMs);
      const cleanup = () => {
        clearInterval(heartbeat);
        unsubscribe();
        open.delete(res);
      };
      res.on('close', cleanup);
      write('retry: 3000\n\n');
      if (last) {
        try {
          const since = new Date(Date.now() - config.replayWindowMs).toISOString();
          const { events, complete } = await hub.replay(subscriber, last, since, config.maxReplay);
          for (const event of events) write(frame(event));
          if (!complete) write(`id: ${formatEventId(now)}\nevent: reset\ndata: ${JSON.stringify({ reason: `more than ${config.maxReplay} events were missed: list the jobs again` })}\n\n`);
        } catch (err) {
          // The answer has begun: end it, and the client reconnects with the same Last-Event-ID.
          request.log.warn({ err }, 'job events: replay failed');
          res.end();
          return;
        }
      }
      write(`id: ${formatEventId(now)}\nevent: ready\ndata: {}\n\n`);
      const held = buffered;
      buffered = undefined;
      for (const event of held) write(frame(event));
    },
  );
}
