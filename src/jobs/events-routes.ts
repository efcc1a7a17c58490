/**
 * GET /jobs/events: the live job events as Server-Sent Events (the WHATWG HTML "Server-sent events"
 * format): `event: status` or `event: parameter`, an `id` to resume from with Last-Event-ID, and comment
 * heartbeats. Restrictions and visibility are those of GET /jobs.
 *
 * Limits: open streams per user (429) and per instance (503), both refused before the stream
 * starts and freed when it closes; a stream ends (event `end`) when its access token expires, exactly,
 * and within jobs.events.tokenRecheckMs (plus the revocation list's second) of a revocation anywhere.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requireCapability, requireToken, type Principal } from '../auth/index.ts';
import type { AppContext } from '../kernel/context.ts';
import { InvalidRequest, ServiceUnavailable, TooManyRequests } from '../kernel/errors.ts';
import { errors, SECURITY } from '../kernel/openapi.ts';
import { ErrorBody } from '../kernel/schemas.ts';
import { EventsQuery } from './api-schemas.ts';
import type { JobsConfig } from './config-schema.ts';
import type { EventStreams, OpenStream } from './event-streams.ts';
import { formatEventId, parseEventId, type JobEvent, type Subscriber } from './events.ts';
import { parseListQuery } from './list-query.ts';
import { listVisibility } from './privileges.ts';

/** A stream whose client reads slower than this much is ended: it reconnects and resumes. */
const MAX_BUFFERED = 4 * 1024 * 1024;
/** setTimeout's longest delay (about 24.8 days); a later expiry is caught by the periodic check. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Each event's text is made once, however many streams send it. */
const frames = new WeakMap<JobEvent, string>();

function frame(event: JobEvent): string {
  let text = frames.get(event);
  if (text === undefined) {
    text = `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;
    frames.set(event, text);
  }
  return text;
}

export interface JobEventsOptions {
  ctx: AppContext;
  auth: ReturnType<typeof requireToken>;
  /** Started by the composition root (event-streams.ts). */
  streams: EventStreams;
}

export const jobEventsRoute: FastifyPluginAsyncTypebox<JobEventsOptions> = async (app, { ctx, auth, streams }) => {
  const config: JobsConfig['events'] = ctx.config.jobs.events;
  const { hub, open, perUser } = streams;

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
          'Each event has an id; a client that reconnects with Last-Event-ID (header, or the lastEventId parameter) first gets the events it missed within jobs.events.replayWindowMs, or a `reset` event when there were too many. The first event, `ready`, carries the position to resume from. The stream ends with an `end` event when the access token expires or is revoked. At most jobs.events.maxStreamsPerUser streams per user (429) and jobs.events.maxSubscribers per instance (503) are open at once. Browsers, whose EventSource sends no Authorization header, may pass access_token in the query.',
        querystring: EventsQuery,
        headers: Type.Object({
          'last-event-id': Type.Optional(Type.String({ maxLength: 64, description: 'The id of the last event received: the stream resumes after it (the HTML Server-Sent Events reconnection header)' })),
        }),
        response: errors(400, 401, 403, 429, 503),
        documented: {
          responses: {
            200: {
              description:
                'A text/event-stream, open while the access token is valid: `event: status` data a JobStatusEvent (components.schemas); `event: parameter` data a JobParameterEvent; `event: ready` and `event: reset`; `event: end` data {reason} when the token expires or is revoked; comment lines as heartbeats',
              content: { 'text/event-stream': Type.String() },
            },
            429: {
              description: 'too_many_requests: the caller has jobs.events.maxStreamsPerUser streams open already on this instance',
              content: { 'application/json': ErrorBody },
              headers: { 'Retry-After': Type.Integer({ minimum: 1, description: 'Seconds to wait before asking again' }) },
            },
            503: {
              description: 'service_unavailable: this instance has jobs.events.maxSubscribers streams open already (another instance may not), or the database is away',
              content: { 'application/json': ErrorBody },
              headers: { 'Retry-After': Type.Integer({ minimum: 1, description: 'Seconds to wait before asking again' }) },
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
      // Both limits are checked and taken in one synchronous step, before anything is written.
      const username = principal.username;
      const mine = perUser.get(username) ?? 0;
      if (mine >= config.maxStreamsPerUser) {
        throw new TooManyRequests(`${username} has ${mine} event streams open on this instance, the most jobs.events.maxStreamsPerUser (${config.maxStreamsPerUser}) allows; close one first`, 5);
      }
      if (open.size >= config.maxSubscribers) {
        throw new ServiceUnavailable(`this instance has ${open.size} event streams open, the most jobs.events.maxSubscribers (${config.maxSubscribers}) allows; try again later or another instance`);
      }

      const res: ServerResponse = reply.raw;
      reply.hijack();
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
      });
      const write = (text: string) => {
        if (res.writableEnded) return;
        res.write(text);
        if (res.writableLength > MAX_BUFFERED) res.end();
      };
      // What the hub sent since the last flush; held until `ready` is written (see below).
      let pending: string[] = [];
      let live = false;
      const flush = () => {
        if (!live || pending.length === 0) return;
        const text = pending.length === 1 ? pending[0]! : pending.join('');
        pending = [];
        write(text);
      };
      const subscriber: Subscriber = {
        visibility: listVisibility(principal, q.allOwners),
        restrictions: q.restrictions,
        send: (event) => void pending.push(frame(event)),
        flush,
      };
      let unsubscribe = () => {};
      let expiry: NodeJS.Timeout | undefined;
      const heartbeat = setInterval(() => write(': keepalive\n\n'), config.heartbeatMs);
      const stream: OpenStream = {
        username,
        principal,
        end: (reason) => {
          write(`event: end\ndata: ${JSON.stringify({ reason })}\n\n`);
          res.end();
        },
      };
      let closed = false;
      const cleanup = () => {
        if (closed) return;
        closed = true;
        clearInterval(heartbeat);
        clearTimeout(expiry);
        unsubscribe();
        open.delete(stream);
        const left = (perUser.get(username) ?? 1) - 1;
        if (left > 0) perUser.set(username, left);
        else perUser.delete(username);
      };
      open.add(stream);
      perUser.set(username, mine + 1);
      res.on('close', cleanup);
      // At the token's expiry exactly (RFC 9068 §4 `exp`), not at the next periodic check.
      const expiresIn = principal.claims.exp * 1000 - Date.now();
      if (expiresIn < MAX_TIMER_MS) expiry = setTimeout(() => stream.end('the access token has expired'), Math.max(0, expiresIn));

      try {
        // The position, then at once the subscription: events after `now` arrive live, those before are replayed.
        // Live events are held while the missed ones are written, so that none is lost or sent out of order.
        const now = await hub.position();
        if (closed) return;
        unsubscribe = hub.subscribe(subscriber);
        write('retry: 3000\n\n');
        if (last) {
          const since = new Date(Date.now() - config.replayWindowMs).toISOString();
          const { events, complete } = await hub.replay(subscriber, last, since, config.maxReplay);
          if (closed) return;
          if (events.length > 0) write(events.map(frame).join(''));
          if (!complete) write(`id: ${formatEventId(now)}\nevent: reset\ndata: ${JSON.stringify({ reason: `more than ${config.maxReplay} events were missed (jobs.events.maxReplay): list the jobs again` })}\n\n`);
        }
        write(`id: ${formatEventId(now)}\nevent: ready\ndata: {}\n\n`);
        live = true;
        flush();
      } catch (err) {
        // The answer has begun: end it, and the client reconnects with the same Last-Event-ID.
        request.log.warn({ err }, 'job events: replay failed');
        res.end();
      }
    },
  );
};
